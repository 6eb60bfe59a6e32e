"""The researcher's form for a rating experiment, as the raw spec that
:func:`~cyoa.rating.spec.parse_rating_spec` checks, so the form and spec files obey the same
rules; and a stored spec back as the form's values (to edit it). Pure: form fields in, a spec
dict (or a :class:`RatingFormError`) out.

The form's fields (names as in ``templates/research/rating_new.html``): the spec's own
(``id``, ``title``, ``instrument``, ``raters_per_story``, …); ``stories_from`` (``file``,
``cowriting``, ``generated``, or ``keep`` when editing); ``aiss_check`` (the AISS built-in
check); ``checks``, one researcher-written attention check per line (:func:`check_lines`);
``exclude_*``, one field per exclusion rule, blank for none; ``corrupt_<operation>`` with its
``_seed`` and ``_fraction``; and, for generated stories, ``generate_models`` (a list),
``prompts`` (one per line), ``stories_per_prompt``, ``sentences`` and ``seed``. Uploaded files
are saved by the caller and passed as paths relative to the spec's folder.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from cyoa.languages import SOURCE_LANGUAGE, form_fields, spec_fields
from cyoa.rating.instruments import Instrument
from cyoa.rating.spec import DEFAULTS, ID, RESERVED_IDS
from cyoa.rating.stories.corrupt import OPERATIONS
from cyoa.rating.stories.cowriting import FROM_COWRITING

INSTRUMENTS = ("aiss-v1", "ttcw", "fei", "custom")
SOURCES = ("file", FROM_COWRITING, "generated", "keep")
PROMPTS_MAX = 200
# The most sentences one generation job writes (models × prompts × stories per prompt ×
# sentences): a job runs on the server's CPU beside the live studies, one sentence after
# another, and should end within the hour, not hold the models for days.
GENERATION_MAX_SENTENCES = 1000
PROMPT_MAX_CHARS = 2000
GENERATION_RANGES = {"stories_per_prompt": (1, 50), "sentences": (1, 30), "seed": (0, 2**31 - 1)}
_GENERATION_LABELS = {
    "stories_per_prompt": "Stories per prompt",
    "sentences": "Sentences per story",
    "seed": "Seed",
}
_EXCLUSIONS = (
    # (form field, rule, threshold field, number type, extra field, its spec name, label)
    ("exclude_failed_checks", "failed_attention_checks", "at_least", int, "", "",
     "Failed attention checks"),
    ("exclude_words_per_minute", "words_per_minute", "above", float,
     "exclude_words_per_minute_statistic", "statistic", "Words per minute"),
    ("exclude_seconds_per_story", "seconds_per_story", "below", float,
     "exclude_seconds_per_story_statistic", "statistic", "Seconds per story"),
    ("exclude_straight_lining", "straight_lining", "at_least", int,
     "exclude_straight_lining_min_items", "min_items", "Straight-lined pages"),
)  # fmt: skip
_NUMBER_EXTRAS = {"min_items"}


class RatingFormError(ValueError):
    """A form that cannot become a spec; the message names the field and says what to write."""


@dataclass(frozen=True)
class Generation:
    """Stories to be written by the systems (:func:`cyoa.rating.stories.generate.generate_stories`):
    each model card in ``models`` is one system, named after the card."""

    models: tuple[str, ...]
    prompts: tuple[str, ...]
    stories_per_prompt: int
    sentences: int
    seed: int

    @property
    def total(self) -> int:
        """How many stories it writes."""
        return len(self.models) * len(self.prompts) * self.stories_per_prompt

    def placeholders(self) -> list[dict[str, str]]:
        """A stand-in for each story it will write (its id and source as
        :func:`~cyoa.rating.stories.generate.generate_stories` names them, its prompt as text), so
        the rest of the spec can be checked before anything is generated."""
        return [
            {"story_id": f"{model}-p{p}-{n}", "source": model, "text": prompt}
            for p, prompt in enumerate(self.prompts, start=1)
            for n in range(1, self.stories_per_prompt + 1)
            for model in self.models
        ]


def form_defaults() -> dict[str, Any]:
    """The form's initial values: the AISS with its built-in attention check (ticked only
    with the AISS, the one instrument it goes with), stories from a file, the spec's default
    numbers."""
    values: dict[str, Any] = {
        "id": "",
        "title": "",
        "instrument": "aiss-v1",
        "raters_per_story": str(DEFAULTS["raters_per_story"]),
        "stories_per_rater": str(DEFAULTS["stories_per_rater"]),
        "dropout_minutes": str(DEFAULTS["dropout_minutes"]),
        "first_answer_minutes": str(DEFAULTS["first_answer_minutes"]),
        "consent": "",
        "instructions": "",
        "completion_url": "",
        "completion_code": "",
        "language": SOURCE_LANGUAGE,
        "languages": "",
        "checks": "",
        "exclude_failed_checks": "",
        "exclude_words_per_minute": "",
        "exclude_words_per_minute_statistic": "median",
        "exclude_seconds_per_story": "",
        "exclude_seconds_per_story_statistic": "median",
        "exclude_straight_lining": "",
        "exclude_straight_lining_min_items": "5",
        "stories_from": "file",
        "links": "",
        "cowriting_experiment": "",
        "generate_models": [],
        "prompts": "",
        "stories_per_prompt": "1",
        "sentences": "5",
        "seed": "0",
    }
    for operation in OPERATIONS:
        values |= {f"corrupt_{operation}": "", f"corrupt_{operation}_seed": "1"}
        values[f"corrupt_{operation}_fraction"] = "1.0"
    values["aiss_check"] = "on" if values["instrument"] == "aiss-v1" else ""
    return values


def _text(form: Mapping[str, Any], key: str) -> str:
    value = form.get(key)
    return value.strip() if isinstance(value, str) else ""


def _number(form: Mapping[str, Any], key: str, kind: type, label: str) -> int | float:
    value = _text(form, key)
    try:
        return kind(value)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise RatingFormError(f"{label}: please enter {what} (got '{value}').") from None


def experiment_id(form: Mapping[str, Any]) -> str:
    """The form's experiment id, checked: it names the experiment's links and its folder."""
    exp_id = _text(form, "id")
    if not ID.fullmatch(exp_id):
        raise RatingFormError(
            "Experiment id: use lowercase letters, digits, - and _ (at most 64, starting with a "
            "letter or digit)."
        )
    if exp_id in RESERVED_IDS:
        raise RatingFormError(f"Experiment id: '{exp_id}' names a page here; choose another.")
    return exp_id


def spec_from_form(form: Mapping[str, Any], files: Mapping[str, Any]) -> dict[str, Any]:
    """The raw rating spec the form describes. ``files`` maps ``"stories"``,
    ``"instrument"`` and ``"questions"`` to the saved files' paths (relative to the folder
    the spec is then read from), or ``"instrument"`` to a custom instrument's table
    (:func:`custom_instrument_table`); a file the form needs but ``files`` lacks is a
    :class:`RatingFormError` saying to choose it (a browser never sends a file again)."""
    spec: dict[str, Any] = {"id": experiment_id(form), "kind": "rating"}
    for key, label, what in (
        ("title", "Title", "the study's title"),
        ("consent", "Consent", "what raters agree to before they start"),
        ("instructions", "Instructions", "what raters should do, shown before the first story"),
    ):
        spec[key] = _text(form, key)
        if not spec[key]:
            raise RatingFormError(f"{label}: this is empty; please write {what}.")
    for key in ("completion_url", "completion_code"):
        if _text(form, key):
            spec[key] = _text(form, key)
    spec |= spec_fields(_text(form, "language"), _text(form, "languages"))
    for key, label in (
        ("raters_per_story", "Raters per story"),
        ("stories_per_rater", "Stories per rater"),
        ("dropout_minutes", "Dropout after (minutes)"),
        ("first_answer_minutes", "Dropout before the first answer (minutes)"),
    ):
        spec[key] = _number(form, key, int, label)
    instrument = _text(form, "instrument")
    if instrument not in INSTRUMENTS:
        raise RatingFormError(f"Instrument: choose one of {', '.join(INSTRUMENTS)}.")
    if instrument == "custom":
        spec["instrument"] = _needed(files, "instrument", "Custom instrument: choose its TOML file")
    else:
        spec["instrument"] = instrument
    if instrument == "fei":
        spec["questions"] = {
            "file": _needed(files, "questions", "FEI questions: choose the questions file")
        }
    spec["stories"] = _stories(form, files)
    checks = check_lines(_text(form, "checks"))
    if _text(form, "aiss_check"):
        if instrument != "aiss-v1":
            raise RatingFormError(
                "Attention checks: the AISS quality check goes with the AISS only, and this "
                f"study uses {instrument}: untick it, or write your own check below."
            )
        checks.insert(0, {"builtin": "aiss"})
    if checks:
        spec["attention_checks"] = checks
    exclusions = _exclusions(form)
    if exclusions:
        spec["exclusions"] = exclusions
    corrupt = _corruptions(form)
    if corrupt:
        spec["corrupt"] = corrupt
    return spec


def _needed(files: Mapping[str, Any], key: str, message: str) -> Any:
    if key not in files:
        raise RatingFormError(f"{message} (after an error, files must be chosen again).")
    return files[key]


def _stories(form: Mapping[str, Any], files: Mapping[str, Any]) -> dict[str, Any]:
    source = _text(form, "stories_from")
    if source not in SOURCES:
        raise RatingFormError("Stories: choose where they come from.")
    if source == FROM_COWRITING:
        experiment = _text(form, "cowriting_experiment")
        if not experiment:
            raise RatingFormError(
                "Stories: choose the co-writing experiment whose stories to rate."
            )
        return {"from": FROM_COWRITING, "experiment": experiment}
    path = _needed(files, "stories", "Stories: choose a stories file (JSON Lines, CSV or JSON)")
    return {"file": path, "links": bool(_text(form, "links"))}


def check_lines(text: str) -> list[dict[str, Any]]:
    """Researcher-written attention checks, one per line as
    ``id | kind | answer | story id (blank: every story) | question``: ``kind`` is
    ``yes_no``, ``true_false`` or ``likert-N`` (N points, numbered), ``answer`` the right
    answer (yes/no, true/false, or a point). Blank lines are skipped. The checks are the
    spec's ``[[attention_checks]]`` tables."""
    checks = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = [part.strip() for part in line.split("|", 4)]
        if len(parts) < 5 or not parts[0] or not parts[4]:
            raise RatingFormError(
                f"Attention checks, line {number}: write 'id | kind | answer | story id | "
                "question' (e.g. 'qc-village | true_false | true | s1 | The story takes place "
                "in a village.'; leave the story id blank to ask it with every story)."
            )
        check_id, kind, answer, story_id, question = parts
        check: dict[str, Any] = {"id": check_id, "text": question}
        if kind.startswith("likert-") and _is_number(kind[len("likert-") :]):
            check |= {"kind": "likert", "points": int(kind[len("likert-") :])}
        elif kind in ("yes_no", "true_false"):
            check["kind"] = kind
        else:
            raise RatingFormError(
                f"Attention checks, line {number}: the kind must be yes_no, true_false or "
                f"likert-N (e.g. likert-5), not '{kind}'."
            )
        check["answer"] = int(answer) if _is_number(answer) else answer
        if story_id:
            check["story_id"] = story_id
        checks.append(check)
    return checks


def _is_number(text: str) -> bool:
    """Whether ``text`` is a whole number written in ASCII digits (``"²"`` and ``"٣"`` are
    digits to Python, but not numbers ``int`` reads)."""
    return text.isascii() and text.isdecimal()


def kept_checks(values: Mapping[str, Any], spec: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The stored spec's attention checks when the edited form leaves them as it showed them
    (the form's lines cannot hold a Likert check's labels, nor the AISS check on one story
    only, so re-reading them would lose those); None when the researcher changed them."""
    stored = list(spec.get("attention_checks", []))
    shown = form_from_spec(spec, "")
    same_lines = check_lines(_text(values, "checks")) == check_lines(shown["checks"])
    same_builtin = bool(values.get("aiss_check")) == bool(shown["aiss_check"])
    return stored if same_lines and same_builtin else None


def _number_text(value: float) -> str:
    """A number as the form shows it, read back as the same number (``1234567``, ``0.25``)."""
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


def _exclusions(form: Mapping[str, Any]) -> list[dict[str, Any]]:
    rules = []
    for field, rule, threshold, kind, extra, extra_name, label in _EXCLUSIONS:
        if not _text(form, field):
            continue
        table: dict[str, Any] = {"rule": rule, threshold: _number(form, field, kind, label)}
        if extra and _text(form, extra):
            table[extra_name] = (
                _number(form, extra, int, label)
                if extra_name in _NUMBER_EXTRAS
                else _text(form, extra)
            )
        rules.append(table)
    return rules


def _corruptions(form: Mapping[str, Any]) -> list[dict[str, Any]]:
    tables = []
    for operation in OPERATIONS:
        if not _text(form, f"corrupt_{operation}"):
            continue
        label = f"Corrupted controls, {operation.replace('_', ' ')}"
        tables.append(
            {
                "operation": operation,
                "seed": _number(form, f"corrupt_{operation}_seed", int, f"{label}: seed"),
                "fraction": _number(
                    form, f"corrupt_{operation}_fraction", float, f"{label}: fraction"
                ),
            }
        )
    return tables


def generation_from_form(form: Mapping[str, Any], available: Collection[str]) -> Generation:
    """The stories to generate: two or more of the ``available`` model cards, the prompts
    (one per line) and the numbers, each in :data:`GENERATION_RANGES`, writing at most
    :data:`GENERATION_MAX_SENTENCES` sentences in all."""
    chosen = form.get("generate_models") or []
    models = tuple(dict.fromkeys(name for name in chosen if isinstance(name, str)))
    if len(models) < 2:
        raise RatingFormError("Generated stories: choose two or more models to compare.")
    missing = [name for name in models if name not in available]
    if missing:
        raise RatingFormError(
            f"Generated stories: this server has not loaded {', '.join(missing)}; choose among "
            f"{', '.join(sorted(available)) or 'none'}."
        )
    prompts = tuple(line.strip() for line in _text(form, "prompts").splitlines() if line.strip())
    if not prompts:
        raise RatingFormError("Generated stories: write at least one prompt (one per line).")
    if len(prompts) > PROMPTS_MAX:
        raise RatingFormError(f"Generated stories: give at most {PROMPTS_MAX} prompts.")
    if any(len(prompt) > PROMPT_MAX_CHARS for prompt in prompts):
        raise RatingFormError(
            f"Generated stories: a prompt is longer than {PROMPT_MAX_CHARS:,} characters."
        )
    numbers = {}
    for key, (low, high) in GENERATION_RANGES.items():
        label = _GENERATION_LABELS[key]
        numbers[key] = int(_number(form, key, int, f"Generated stories, {label.lower()}"))
        if not low <= numbers[key] <= high:
            raise RatingFormError(
                f"Generated stories, {label.lower()}: use a whole number from {low} to {high}."
            )
    generation = Generation(models=models, prompts=prompts, **numbers)
    if (asked := generation.total * generation.sentences) > GENERATION_MAX_SENTENCES:
        raise RatingFormError(
            f"Generated stories: this asks for {generation.total:,} stories of "
            f"{generation.sentences} sentences, {asked:,} sentences in all; one job writes at "
            f"most {GENERATION_MAX_SENTENCES:,} (models × prompts × stories per prompt × "
            "sentences), so that it ends within the hour on this server's CPU while the live "
            "studies share the models. Ask for fewer, or split the prompts over several "
            "experiments."
        )
    return generation


def form_from_spec(spec: Mapping[str, Any], title: str) -> dict[str, Any]:
    """The form's values for a stored rating spec (to edit it): the stories kept unless a
    new source is chosen, a custom instrument kept unless a new file is chosen."""
    values = form_defaults()
    stories = spec.get("stories")  # an imported experiment's spec holds their number
    values |= {
        "id": spec.get("id", ""),
        "title": title,
        "consent": spec.get("consent", ""),
        "instructions": spec.get("instructions", ""),
        "completion_url": spec.get("completion_url", ""),
        "completion_code": spec.get("completion_code", ""),
        **form_fields(dict(spec)),
        "stories_from": "keep",
        "links": "on" if isinstance(stories, dict) and stories.get("links") else "",
        "aiss_check": "",
    }
    for key in ("raters_per_story", "stories_per_rater", "dropout_minutes", "first_answer_minutes"):
        values[key] = str(spec.get(key, DEFAULTS[key]))
    instrument = spec.get("instrument", "")
    values["instrument"] = instrument if instrument in INSTRUMENTS else "custom"
    lines = []
    for check in spec.get("attention_checks", []):
        if "builtin" in check:
            values["aiss_check"] = "on"
            continue
        lines.append(_check_line(check))
    values["checks"] = "\n".join(lines)
    for field, rule, threshold, _, extra, extra_name, _ in _EXCLUSIONS:
        for table in spec.get("exclusions", []):
            if table.get("rule") == rule:
                values[field] = _number_text(table[threshold])
                if extra and extra_name in table:
                    values[extra] = str(table[extra_name])
    for table in spec.get("corrupt", []):
        operation = table.get("operation")
        values[f"corrupt_{operation}"] = "on"
        values[f"corrupt_{operation}_seed"] = str(table.get("seed", 0))
        values[f"corrupt_{operation}_fraction"] = _number_text(table.get("fraction", 1.0))
    return values


def _check_line(check: Mapping[str, Any]) -> str:
    kind = check.get("kind", "")
    answer = check.get("answer", "")
    if isinstance(answer, bool):
        answer = ("yes" if answer else "no") if kind == "yes_no" else str(answer).lower()
    shown_kind = f"likert-{check.get('points')}" if kind == "likert" else kind
    story = check.get("story_id", "")
    return f"{check.get('id', '')} | {shown_kind} | {answer} | {story} | {check.get('text', '')}"


def custom_instrument_table(instrument: Instrument) -> dict[str, Any]:
    """A stored custom instrument as the spec's ``instrument`` table
    (:func:`cyoa.rating.instruments.instrument_from_spec`), translations included, to keep
    it when the form is sent again without its file."""
    items = []
    for item in instrument.items:
        table: dict[str, Any] = {"id": item.id, "text": item.text, "kind": item.kind}
        if item.kind == "likert":
            table |= {
                "points": item.points,
                "low": item.low,
                "labels": list(item.labels),
                "reverse": item.reverse,
            }
        if item.factor:
            table["factor"] = item.factor
        if item.rationale:
            table["rationale"] = True
        items.append(table)
    return {
        "id": instrument.id,
        "name": instrument.name,
        "version": instrument.version,
        "reference": instrument.reference,
        "attribution": instrument.attribution,
        "instructions": instrument.instructions,
        "items": items,
        "language": instrument.language,
        "translations": {
            translation.language: {
                "translator": translation.translator,
                "source": translation.source,
                "validated": translation.validated,
                "name": translation.name,
                "instructions": translation.instructions,
                "items": {
                    item.id: {
                        "text": item.text,
                        **({"labels": list(item.labels)} if item.labels else {}),
                    }
                    for item in translation.items
                },
            }
            for translation in instrument.translations
        },
    }
