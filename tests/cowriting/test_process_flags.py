"""Writing-process flags on hand-worked keystroke records: each says what it saw."""

from __future__ import annotations

from cyoa.cowriting.process.flags import (
    MAX_CHARS_PER_SECOND,
    describe,
    fastest_typing,
    session_flags,
)
from tests.cowriting.test_process_measures import Log


def typed(log: Log, at: int, text: str, every_ms: int, box: str = "line", start: int = 0) -> int:
    for i, char in enumerate(text):
        log.text(at + i * every_ms, box, start + i, char)
    return at + len(text) * every_ms


def test_a_line_pasted_whole_is_flagged_with_how_much_was_pasted():
    log = Log().text(0, "line", 0, "She left the house at dawn.", source="pasted")
    log.text(900, "line", 26, "!", ".")
    flags = session_flags(log.ops)
    assert [f.kind for f in flags] == ["pasted_line"]
    assert flags[0].says == (
        "Round 1: 21 of the 22 characters of the writer's line were pasted or dropped in, "
        "not typed."
    )


def test_a_typed_line_with_a_short_paste_is_not_flagged():
    log = Log()
    end = typed(log, 0, "She left the house", 150)
    log.text(end, "line", 18, " at dawn.", source="pasted")
    assert session_flags(log.ops) == []


def test_typing_at_a_human_pace_is_not_flagged_but_faster_than_the_bound_is():
    human = Log()
    typed(human, 0, "The rain would not stop that night.", 120)
    assert session_flags(human.ops) == []
    scripted = Log()
    typed(scripted, 0, "The rain would not stop that night.", 20)
    flags = session_flags(scripted.ops)
    assert [f.kind for f in flags] == ["fast_typing"]
    assert "characters were typed at 50 characters a second" in flags[0].says


def test_typing_speed_is_judged_over_at_least_twenty_characters():
    log = Log()
    typed(log, 0, "Quick burst", 1)
    assert fastest_typing(log.ops) is None
    log = Log()
    typed(log, 0, "abcdefghijklmnopqrstu", 50)
    chars, rate = fastest_typing(log.ops)
    assert (chars, rate) == (20, 20.0)
    assert rate > MAX_CHARS_PER_SECOND


def test_holding_a_key_down_is_not_flagged_as_fast_typing():
    log = Log()
    end = typed(log, 0, "The end", 150)
    end = typed(log, end, "-" * 40, 30, start=7)
    typed(log, end, "." * 30, 30, start=47)
    assert session_flags(log.ops) == []


def test_dictated_phrases_are_not_flagged_as_fast_typing():
    log = Log()
    phrases = ["The rain would ", "not stop that ", "night, and the ", "river rose."]
    at, start = 0, 0
    for phrase in phrases:
        log.text(at, "line", start, phrase)
        at, start = at + 20, start + len(phrase)
    assert session_flags(log.ops) == []


def test_text_that_changed_while_the_tab_was_hidden_is_flagged_in_its_round():
    log = Log(2)
    log.text(0, "line", 0, "Hello")
    log.page(100, "hidden")
    log.text(200, "line", 5, " there")
    log.page(300, "visible")
    log.text(400, "line", 11, "!")
    flags = session_flags(log.ops)
    assert [(f.kind, f.round) for f in flags] == [("hidden_tab", 2)]
    assert describe(flags) == (
        "Round 2: 6 characters of the text changed while the writer's tab was hidden."
    )


def test_a_reload_does_not_flag_the_typing_after_it_as_done_in_a_hidden_tab():
    reloaded = Log(2)
    reloaded.text(0, "line", 0, "Hello")
    reloaded.page(100, "hidden")  # the old page unloading
    reloaded.page(200, "visible")  # the new page's starting visibility
    reloaded.text(300, "line", 5, " there")
    assert session_flags(reloaded.ops) == []
    in_use = Log(2)
    in_use.page(100, "hidden")
    in_use.view(200, 1, "focus")  # a page without its starting row, seen in use
    in_use.text(300, "line", 0, "Hello")
    assert session_flags(in_use.ops) == []
