"""Rating instruments as data: what raters are asked about a story, and how answers are read.

- :data:`AISS_V1`: the AI Story Scale v1, 22 Likert items in five factors (:mod:`.aiss`).
- :data:`TTCW`: the Torrance Test of Creative Writing, 14 Yes/No tests with a rationale
  (:mod:`.ttcw`).
- :func:`fei_instrument`: Fabula Entropy Indexing probes, true/false questions written per
  story (:mod:`.fei`).
- :func:`instrument_from_spec`: a researcher's own instrument from a TOML spec (:mod:`.custom`).
- :func:`load_instrument`: any of them by name or spec path.
- :mod:`.translation`: a custom instrument's items in other languages, and the sentence that
  refuses a study in a language its instrument lacks (the built-in ones are English only).

The vendored texts and their licences are in ``cyoa/rating/instruments/data/``; an instrument's
``attribution`` is the notice to show wherever its items are shown or shipped.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from cyoa.rating.instruments import aiss, ttcw
from cyoa.rating.instruments.aiss import load_aiss
from cyoa.rating.instruments.custom import instrument_from_spec
from cyoa.rating.instruments.fei import FeiQuestion, fei_instrument
from cyoa.rating.instruments.ttcw import load_ttcw
from cyoa.rating.instruments.types import Instrument, InstrumentError, Item

AISS_V1: Instrument = load_aiss()
TTCW: Instrument = load_ttcw()
BUILT_IN: dict[str, Instrument] = {AISS_V1.id: AISS_V1, TTCW.id: TTCW}
RATER_CREDITS: dict[str, str] = {AISS_V1.id: aiss.RATER_CREDIT, TTCW.id: ttcw.RATER_CREDIT}

__all__ = [
    "AISS_V1",
    "BUILT_IN",
    "TTCW",
    "FeiQuestion",
    "Instrument",
    "InstrumentError",
    "Item",
    "fei_instrument",
    "instrument_from_spec",
    "load_instrument",
    "rater_credit",
]


def rater_credit(instrument: Instrument) -> str:
    """The licence credit raters are shown beside ``instrument``'s items: for a built-in
    one, its licence's credit without the instrument's name or scoring (which could prime
    them); for any other, its ``attribution`` as its author wrote it ("" for none)."""
    return RATER_CREDITS.get(instrument.id, instrument.attribution)


def load_instrument(name_or_path: str) -> Instrument:
    """The instrument named ``"aiss-v1"`` or ``"ttcw"``, or the custom one whose TOML spec is
    at the path ``name_or_path`` (see :mod:`cyoa.rating.instruments.custom`).

    ``"fei"`` has no fixed items: build it with :func:`fei_instrument` from the study's
    questions. Raises :class:`InstrumentError` saying what to pass instead.
    """
    if name_or_path in BUILT_IN:
        return BUILT_IN[name_or_path]
    if name_or_path == "fei":
        raise InstrumentError(
            "The FEI instrument has no fixed items: build it from the study's questions with "
            "fei_instrument(questions) (story_id, question_id, kind, text for each)."
        )
    path = Path(name_or_path)
    if not path.is_file():
        raise InstrumentError(
            f"Unknown instrument {name_or_path!r}: use {', '.join(BUILT_IN)}, or the path of "
            f"a TOML spec file."
        )
    try:
        # utf-8-sig: an editor's byte-order mark is not part of the TOML.
        spec = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as error:
        raise InstrumentError(
            f"{path}: not UTF-8 text ({error.reason}); save it as UTF-8."
        ) from None
    except RecursionError:
        raise InstrumentError(
            f"{path}: the TOML is nested too deeply; an instrument is a table with [[items]]."
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise InstrumentError(f"{path}: not valid TOML ({error}); fix the file.") from None
    except ValueError:  # Python reads at most sys.get_int_max_str_digits() digits
        raise InstrumentError(
            f"{path}: a number with more than {sys.get_int_max_str_digits():,} digits; shorten it."
        ) from None
    return instrument_from_spec(spec, str(path))
