"""Experiment specs: which systems are compared, and how a writer's session runs.

A spec is a TOML file in ``experiments/`` (see ``experiments/short-story-1.toml`` for every
field with comments). Loading resolves each system's model card and sampling, and fills the
paper's default survey (Clark & Smith 2021, §4.3) when the spec does not give one.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask_babel import gettext

from cyoa import store
from cyoa.cowriting.flow import Limits, RuleError, normalize_text
from cyoa.cowriting.process.exclusion import ExclusionRuleError, flag_rule
from cyoa.generation.types import ModelCard, System
from cyoa.languages import SOURCE_LANGUAGE, StudyLanguages, marked, study_languages
from cyoa.web.completion import completion_url_problem, study_code_problem
from cyoa.web.language import sentence

# The scale's labels and the default survey are drawn by the writing page's script, which
# shows them in the page's language (cyoa/web/language.py: SCRIPT_SOURCES); a study's own
# survey text is shown as written.
LIKERT_LABELS = (
    marked("Strongly disagree"),
    marked("Disagree"),
    marked("Neither agree nor disagree"),
    marked("Agree"),
    marked("Strongly agree"),
)

# The paper's survey (Clark & Smith 2021, §4.3, Fig. 3).
DEFAULT_LIKERT = (
    ("happy", marked("I'm happy with my final story.")),
    (
        "collaborative",
        marked("I felt the system and I were working collaboratively to write the story."),
    ),
    ("useful", marked("I thought having the suggestions was useful while writing the story.")),
    ("connected", marked("The suggestions connected to what had happened in the story so far.")),
    ("ideas", marked("The suggestions helped me come up with new ideas.")),
)
DEFAULT_OPEN = (
    ("why_chosen", marked("What made you choose one suggestion over another?")),
    ("looking_for", marked("What were you looking for in the suggestions?")),
)
OPEN_ANSWER_MAX_CHARS = 2000
# How the two systems of a writer's pair are placed in the slots each round:
# "coin": a fair coin per round (the paper); "balanced": each writer sees each system in
# slot 1 equally often (±1 for an odd number of rounds), in a random order of rounds.
SLOT_ORDERS = ("coin", "balanced")
# Which pair of systems a new writer gets (cyoa/cowriting/assignment.py): "balanced": the pair
# with the fewest writers so far; "adaptive": mostly the pair that most narrows the ranking,
# every pair keeping a floor, the probability stored with the session
# (bench/results/ranking.md: narrower where the systems' strengths are spread out).
PAIRINGS = ("balanced", "adaptive")
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# /research/experiments/new and /research/ratings/new are the forms, so an experiment
# called "new" would have no page of its own (either kind).
# The sane range of every number in a spec (inclusive): beyond these a single writer's
# session would cost without bound (a hundred million rounds, a billion-token suggestion).
RANGES = {
    "rounds": (1, 50),
    "min_chars": (1, 2000),
    "max_chars": (1, 2000),
    "target_writers": (0, 100_000),
    "suggestion_timeout_seconds": (0.1, 600),
}
# Per sampling field: whole number only, the accepted values, and the rule as a sentence.
SAMPLING_RULES: dict[str, tuple[bool, Callable[[float], bool], str]] = {
    "top_k": (True, lambda v: 0 <= v <= 1000, "a whole number from 0 (off) to 1000"),
    "top_p": (False, lambda v: 0 < v <= 1, "in (0, 1]; use 1.0 to switch nucleus sampling off"),
    "temperature": (False, lambda v: 0 < v <= 10, "greater than 0 and at most 10"),
    "max_new_tokens": (True, lambda v: 1 <= v <= 1000, "a whole number from 1 to 1000"),
}
MAX_SYSTEMS = 20
MAX_SURVEY_ITEMS = 50
MAX_TITLE_CHARS = 200
MAX_TEXT_CHARS = 20_000


class SpecError(ValueError):
    """An experiment spec that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class SurveyItem:
    id: str
    kind: str  # "likert" (1–5) or "open" (free text)
    text: str


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    consent: str
    instructions: str
    limits: Limits
    systems: tuple[System, ...]
    survey: tuple[SurveyItem, ...]
    prompt_text: str = ""
    prompt_image: str = ""
    completion_url: str = ""
    completion_code: str = ""
    suggestion_timeout_seconds: float = 60.0
    slot_order: str = "coin"
    pairing: str = "balanced"
    target_writers: int = 0
    # The keystroke record (cyoa/cowriting/process/): off, the page records nothing of it
    # and the server stores none.
    record_keystrokes: bool = True
    # The writing-process flags whose writers the analysis leaves out ([[exclusions]] rule =
    # "process_flags", cyoa/cowriting/process/exclusion.py); none by default.
    exclude_flags: tuple[str, ...] = ()
    likert_labels: tuple[str, ...] = LIKERT_LABELS
    # The participant pages' language (BCP 47), and every one the browser may pick among.
    language: str = SOURCE_LANGUAGE
    languages: tuple[str, ...] = (SOURCE_LANGUAGE,)
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """Every unordered pair of systems, in spec order: the comparisons writers are
        assigned to (one pair per writer)."""
        names = [s.name for s in self.systems]
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]

    def system(self, name: str) -> System:
        for system in self.systems:
            if system.name == name:
                return system
        raise KeyError(name)


def load_experiment(path: Path, cards: dict[str, ModelCard]) -> Experiment:
    """Read and validate one spec file, resolving its systems against ``cards``."""
    try:
        # utf-8-sig: an editor's byte-order mark is not part of the TOML.
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))
    except RecursionError:
        raise SpecError(f"{path}: the experiment spec is nested too deeply.") from None
    except (OSError, ValueError) as exc:  # also TOMLDecodeError, a 5,000-digit number
        raise SpecError(f"{path}: cannot read the experiment spec ({exc}).") from None
    return experiment_from_dict(raw, cards, where=str(path))


def experiment_from_dict(
    raw: dict[str, Any], cards: dict[str, ModelCard], where: str = "spec"
) -> Experiment:
    """Validate a spec (from a file, an upload or the web form) and resolve its systems.
    Every field is checked for its type and every number for its range (:data:`RANGES`,
    :data:`SAMPLING_RULES`), so a bad spec is a SpecError that names the field, never a
    crash, and no value can make one writer's session unboundedly expensive."""
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: a spec is a table of fields (TOML) or an object (JSON).")

    def need(key: str, kind: type) -> Any:
        if key not in raw:
            raise SpecError(f"{where}: the field '{key}' is required.")
        if not isinstance(raw[key], kind):
            raise SpecError(f"{where}: the field '{key}' must be a {kind.__name__}.")
        return raw[key]

    exp_id = need("id", str)
    if not _ID.match(exp_id):
        raise SpecError(f"{where}: 'id' must be lowercase letters, digits, '-' or '_'.")
    if exp_id in store.RESERVED_IDS:
        raise SpecError(f"{where}: the id '{exp_id}' names a page of the app; choose another.")
    title = need("title", str)
    if len(title) > MAX_TITLE_CHARS:
        raise SpecError(f"{where}: 'title' must be at most {MAX_TITLE_CHARS} characters.")
    limits = _limits(raw, where)
    systems_raw = raw.get("systems", [])
    if not isinstance(systems_raw, list) or len(systems_raw) > MAX_SYSTEMS:
        raise SpecError(
            f"{where}: 'systems' must be a list of up to {MAX_SYSTEMS} tables ([[systems]] in "
            "TOML), each with a 'name' and a 'model'."
        )
    systems = tuple(_system(s, cards, where) for s in systems_raw)
    if len(systems) < 2:
        raise SpecError(f"{where}: a pairwise study needs at least two [[systems]].")
    if len({s.name for s in systems}) != len(systems):
        raise SpecError(f"{where}: each system needs its own name.")
    slot_order = raw.get("slot_order", "coin")
    if slot_order not in SLOT_ORDERS:
        raise SpecError(f"{where}: 'slot_order' must be one of {', '.join(SLOT_ORDERS)}.")
    pairing = _pairing(raw, len(systems), where)
    languages = _languages(raw, where)
    prompt = _table(raw, "prompt", where)
    completion_url, completion_code = _completion(raw, where)
    return Experiment(
        id=exp_id,
        title=title,
        consent=_text(raw, "consent", where),
        instructions=_text(raw, "instructions", where),
        limits=limits,
        systems=systems,
        survey=_survey(_table(raw, "survey", where), where),
        prompt_text=_text(prompt, "text", f"{where}: prompt"),
        prompt_image=_text(prompt, "image", f"{where}: prompt"),
        completion_url=completion_url,
        completion_code=completion_code,
        suggestion_timeout_seconds=_timeout(raw, where),
        slot_order=slot_order,
        pairing=pairing,
        target_writers=_whole(raw, "target_writers", 0, where),
        record_keystrokes=_switch(raw, "record_keystrokes", True, where),
        exclude_flags=_exclude_flags(raw, where),
        language=languages.default,
        languages=languages.allowed,
        source=raw,
    )


def _limits(raw: dict[str, Any], where: str) -> Limits:
    limits = Limits(
        rounds=_whole(raw, "rounds", 5, where),
        min_chars=_whole(raw, "min_chars", 20, where),
        max_chars=_whole(raw, "max_chars", 260, where),
    )
    if limits.min_chars > limits.max_chars:
        raise SpecError(
            f"{where}: need 1 <= min_chars <= max_chars (the shortest turn cannot be longer "
            "than the longest)."
        )
    return limits


def _timeout(raw: dict[str, Any], where: str) -> float:
    timeout = raw.get("suggestion_timeout_seconds", 60.0)
    low, high = RANGES["suggestion_timeout_seconds"]
    if not _is_number(timeout) or not low <= timeout <= high:
        raise SpecError(
            f"{where}: 'suggestion_timeout_seconds' must be a number of seconds from {low} to "
            f"{high}."
        )
    return float(timeout)


def _languages(raw: dict[str, Any], where: str) -> StudyLanguages:
    try:
        return study_languages(raw)
    except ValueError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _pairing(raw: dict[str, Any], systems: int, where: str) -> str:
    pairing = raw.get("pairing", "balanced")
    if pairing not in PAIRINGS:
        raise SpecError(f"{where}: 'pairing' must be one of {', '.join(PAIRINGS)}.")
    if pairing == "adaptive" and systems < 3:
        raise SpecError(
            f"{where}: 'pairing = \"adaptive\"' needs at least three [[systems]] (with two "
            "there is one pair to give)."
        )
    return pairing


def _completion(raw: dict[str, Any], where: str) -> tuple[str, str]:
    """The spec's ``completion_url`` and study-wide ``completion_code`` (either may be ""),
    checked: a web address, a code a platform takes, and no Prolific address without the
    study's code (each writer's own code would be refused there)."""
    url = _text(raw, "completion_url", where)
    if url and not url.startswith(("https://", "http://")):
        raise SpecError(f"{where}: 'completion_url' must start with https:// (or http://).")
    code = raw.get("completion_code", "")
    if "completion_code" in raw and study_code_problem(code):
        raise SpecError(f"{where}: {study_code_problem(code)}")
    if completion_url_problem(url, code):
        raise SpecError(f"{where}: {completion_url_problem(url, code)}")
    return url, code


def _is_number(value: Any) -> bool:
    """A finite int or float (not a bool, NaN or infinity)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _exclude_flags(raw: dict[str, Any], where: str) -> tuple[str, ...]:
    try:
        return flag_rule(raw, where)
    except ExclusionRuleError as exc:
        raise SpecError(str(exc)) from None


def _switch(raw: dict[str, Any], key: str, default: bool, where: str) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise SpecError(f"{where}: '{key}' must be true or false.")
    return value


def _whole(raw: dict[str, Any], key: str, default: int, where: str) -> int:
    """A whole number in its :data:`RANGES` (a float, even 5.0, is refused)."""
    value = raw.get(key, default)
    low, high = RANGES[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SpecError(f"{where}: '{key}' must be a whole number from {low} to {high}.")
    return value


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise SpecError(f"{where}: '{key}' must be text.")
    if len(value) > MAX_TEXT_CHARS:
        raise SpecError(f"{where}: '{key}' must be at most {MAX_TEXT_CHARS} characters.")
    return value


def _table(raw: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise SpecError(f"{where}: '{key}' must be a table of fields ([{key}] in TOML).")
    return value


def _sampling_overrides(raw: Any, name: str, where: str) -> dict[str, Any]:
    """A system's sampling overrides, each field checked against :data:`SAMPLING_RULES`."""
    if raw is None:
        return {}
    problem = f"{where}: system '{name}' has invalid sampling:"
    if not isinstance(raw, dict):
        raise SpecError(f"{problem} write it as a table of {', '.join(SAMPLING_RULES)}.")
    for key, value in raw.items():
        if key not in SAMPLING_RULES:
            raise SpecError(f"{problem} unknown field '{key}' (use {', '.join(SAMPLING_RULES)}).")
        whole, allowed, rule = SAMPLING_RULES[key]
        if not _is_number(value) or (whole and not isinstance(value, int)) or not allowed(value):
            raise SpecError(f"{problem} {key} must be {rule}.")
    return raw


def _system(raw: Any, cards: dict[str, ModelCard], where: str) -> System:
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: each system is a table with a 'name' and a 'model'.")
    name, model = raw.get("name"), raw.get("model")
    if not isinstance(name, str) or not _ID.match(name):
        raise SpecError(f"{where}: each system needs a 'name' (lowercase, digits, '-', '_').")
    if not isinstance(model, str) or model not in cards:
        known = ", ".join(sorted(cards)) or "none"
        raise SpecError(f"{where}: system '{name}' uses unknown model '{model}' (known: {known}).")
    card = cards[model]
    overrides = _sampling_overrides(raw.get("sampling"), name, where)
    try:
        sampling = card.sampling.with_overrides(overrides)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{where}: system '{name}' has invalid sampling: {exc}") from exc
    return System(name=name, model=card, sampling=sampling)


def _survey(raw: dict[str, Any], where: str) -> tuple[SurveyItem, ...]:
    items = _survey_items(raw, "likert", DEFAULT_LIKERT, where)
    items += _survey_items(raw, "open", DEFAULT_OPEN, where)
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        raise SpecError(f"{where}: survey item ids must be unique.")
    return tuple(items)


def _survey_items(
    raw: dict[str, Any], kind: str, default: tuple[tuple[str, str], ...], where: str
) -> list[SurveyItem]:
    entries = raw.get(kind, [{"id": i, "text": t} for i, t in default])
    shape = f"{where}: survey.{kind} must be a list of up to {MAX_SURVEY_ITEMS} items"
    if not isinstance(entries, list) or len(entries) > MAX_SURVEY_ITEMS:
        raise SpecError(f"{shape}, each with an 'id' and a 'text'.")
    items = []
    for entry in entries:
        item_id = entry.get("id") if isinstance(entry, dict) else None
        text = entry.get("text") if isinstance(entry, dict) else None
        if not isinstance(item_id, str) or not 1 <= len(item_id.strip()) <= 64:
            raise SpecError(f"{shape}; each needs an 'id' (1–64 characters) and a 'text'.")
        if not isinstance(text, str) or not text.strip() or len(text) > OPEN_ANSWER_MAX_CHARS:
            raise SpecError(
                f"{shape}; item '{item_id}' needs a 'text' of 1–{OPEN_ANSWER_MAX_CHARS} characters."
            )
        items.append(SurveyItem(item_id, kind, text))
    return items


def load_experiments(folder: Path, cards: dict[str, ModelCard]) -> dict[str, Experiment]:
    """Every ``*.toml`` spec in ``folder``, by experiment id."""
    experiments: dict[str, Experiment] = {}
    for path in sorted(Path(folder).glob("*.toml")):
        exp = load_experiment(path, cards)
        if exp.id in experiments:
            raise SpecError(f"{path}: experiment id '{exp.id}' is used twice.")
        experiments[exp.id] = exp
    return experiments


def validate_survey(answers: Any, items: tuple[SurveyItem, ...]) -> dict[str, Any]:
    """The survey answers, checked: every Likert item answered with 1–5 (an int), open
    answers optional text of at most OPEN_ANSWER_MAX_CHARS characters. Unknown ids rejected."""
    if not isinstance(answers, dict):
        raise RuleError(sentence("The survey answers are missing. Please answer and submit again."))
    known = {item.id for item in items}
    unknown = set(answers) - known
    if unknown:
        raise RuleError(
            sentence("The survey contains an unknown question. Please reload the page.")
        )
    clean: dict[str, Any] = {}
    for item in items:
        value = answers.get(item.id)
        if item.kind == "likert":
            if type(value) is not int or value not in (1, 2, 3, 4, 5):  # not True, not 4.0
                raise RuleError(
                    sentence(
                        "Please answer every statement (missing: “%(statement)s”).",
                        statement=gettext(item.text),
                    )
                )
            clean[item.id] = value
        else:
            text = normalize_text(value) if isinstance(value, str) else ""
            if len(text) > OPEN_ANSWER_MAX_CHARS:
                raise RuleError(
                    sentence(
                        "Please keep each answer under %(n)s characters.", n=OPEN_ANSWER_MAX_CHARS
                    )
                )
            clean[item.id] = text
    return clean
