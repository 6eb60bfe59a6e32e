"""The ranking of all systems in `analyze` and on the dashboard: a system that wins by writing
longer is seen once style is held equal (cyoa/cowriting/analysis/rankings.py)."""

import json
import math
import random

import pytest
from study_builder import Turn, add_writer, make_experiment

from cyoa import store
from cyoa.cowriting.analysis.data import experiment_pairs, load_study
from cyoa.cowriting.analysis.rankings import notes, pair_weights, rank_systems
from cyoa.cowriting.analysis.report import report

SYSTEMS = ("a", "b", "c", "d")
PAIRS = [(x, y) for i, x in enumerate(SYSTEMS) for y in SYSTEMS[i + 1 :]]


def suggestion(system: str, rng: random.Random) -> str:
    """System d writes about twice as long as the others; every system sometimes quotes."""
    words = rng.randint(14, 26) if system == "d" else rng.randint(6, 14)
    text = " ".join(f"{system}word{k}" for k in range(words))
    return f'"{text}," she said.' if rng.random() < 0.3 else text + "."


def longer_wins_study(db, writers: int = 60, seed: int = 7) -> None:
    """Writers with no preference between the systems but a taste for longer suggestions:
    slot 1 is chosen with probability σ(4 · length difference), the style model's length."""
    make_experiment(db, systems=SYSTEMS)
    rng = random.Random(seed)
    for n in range(writers):
        pair = PAIRS[n % len(PAIRS)]
        turns = []
        for r in range(1, 6):
            texts = {system: suggestion(system, rng) for system in pair}
            slot1 = pair[r % 2]
            slot2 = pair[1] if slot1 == pair[0] else pair[0]
            w1, w2 = len(texts[slot1].split()), len(texts[slot2].split())
            first = rng.random() < 1 / (1 + math.exp(-4 * (w1 - w2) / (w1 + w2)))
            chosen = slot1 if first else slot2
            turns.append(Turn(f"line {r}.", texts, slot1, chosen, texts[chosen]))
        add_writer(db, f"w{n}", turns, pair=pair)


@pytest.fixture
def longer_wins(tmp_path):
    db = store.connect(tmp_path / "longer.sqlite")
    longer_wins_study(db)
    yield db
    db.close()


def test_a_system_that_wins_by_writing_longer_is_seen_in_the_style_controlled_ranking(
    longer_wins,
):
    studies = [
        load_study(longer_wins, "exp", pair) for pair in experiment_pairs(longer_wins, "exp")
    ]
    ranked = rank_systems(studies, SYSTEMS, {})
    plain = {s.system: s for s in ranked.plain.systems}
    style = {s.system: s for s in ranked.style.systems}
    assert ranked.plain.systems[0].system == "d"
    assert plain["d"].share.ci_low > 0.25
    # At equal style d is one of four equals again, and length carries the choices.
    assert style["d"].share.ci_low < 0.25 < style["d"].share.ci_high
    assert style["d"].share.estimate < plain["d"].share.estimate - 0.1
    length = ranked.style.covariates[0]
    assert length.name == "length" and length.ci_low > 0
    assert ranked.style.writers == 60 and ranked.style.comparisons == 300


def test_analyze_prints_the_ranking_plain_and_at_equal_style_in_every_format(longer_wins):
    markdown = report(longer_wins, "exp", "markdown")
    assert "# Ranking of all systems: exp" in markdown
    assert "Share at equal style" in markdown and "| length:" in markdown
    *pairs, last = json.loads(report(longer_wins, "exp", "json"))
    assert len(pairs) == 6
    assert last["ranking"]["plain"]["systems"][0]["system"] == "d"
    assert last["ranking"]["style"]["covariates"][0]["name"] == "length"
    csv_lines = report(longer_wins, "exp", "csv").splitlines()
    assert any(
        line.startswith("all systems,ranking_style,length,coefficient,") for line in csv_lines
    )
    assert any(line.startswith("all systems,ranking,d,rank,1") for line in csv_lines)
    # One pair, or the paper's compat mode, has no ranking of all systems.
    assert "Ranking of all systems" not in report(longer_wins, "exp", "markdown", pair=("a", "d"))


def test_the_check_gives_every_pair_the_same_weight_however_many_writers_it_drew():
    pairs = {w: frozenset(p) for w, p in (("w1", "ab"), ("w2", "ab"), ("w3", "cd"), ("w4", "ab"))}
    weights = pair_weights(pairs)
    # Four writers over two pairs: each pair weighs 2; the weights average 1.
    assert weights == pytest.approx({"w1": 2 / 3, "w2": 2 / 3, "w3": 2.0, "w4": 2 / 3})


def circular_study(db) -> None:
    """Choices that go round in a circle: a beats b, b beats c, c beats a, each 4 to 1; the
    pair (a, b) drew three times the writers of each other pair, as an adaptive design may."""
    make_experiment(db, systems=("a", "b", "c"))
    plan = [("a", "b")] * 15 + [("b", "c")] * 5 + [("c", "a")] * 5
    for n, (winner, loser) in enumerate(plan):
        turns = []
        for r in range(1, 6):
            chosen = winner if r < 5 else loser
            texts = {winner: f"{winner} text {r}.", loser: f"{loser} text {r}."}
            turns.append(Turn(f"line {r}.", texts, winner, chosen, texts[chosen]))
        add_writer(db, f"w{n}", turns, pair=(winner, loser))


def test_under_adaptive_pairing_the_ranking_is_unweighted_and_the_check_weighs_pairs_equally(
    tmp_path,
):
    db = store.connect(tmp_path / "circle.sqlite")
    circular_study(db)
    studies = [load_study(db, "exp", pair) for pair in experiment_pairs(db, "exp")]
    sessions = {r.session_id for data in studies for r in data.rounds}
    adaptive = rank_systems(studies, ("a", "b", "c"), {s: 0.5 for s in sessions})
    balanced = rank_systems(studies, ("a", "b", "c"), {})
    db.close()
    # The ranking itself is the plain fit, whatever the stored probabilities.
    assert adaptive.plain == balanced.plain and balanced.equal_pairs is None
    # The crowded pair pulls a above b; with every pair weighing the same the circle is a tie.
    plain = {s.system: s.share.estimate for s in adaptive.plain.systems}
    assert plain["a"] > plain["c"] > plain["b"]
    check = {s.system: s.share.estimate for s in adaptive.equal_pairs.systems}
    assert check == {name: pytest.approx(1 / 3, abs=1e-9) for name in "abc"}
    shown = " ".join(notes(adaptive))
    assert "Adaptive pairing (25 writers with a stored pair probability)" in shown
    assert all(f"{name} 0.333 (" in shown for name in "abc")
