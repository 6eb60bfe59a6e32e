"""``analyze --compat cyoa-2021`` prints, byte for byte, what it printed before the writer-level
analysis and the anytime-valid monitoring were added: the files under ``tests/data/compat/``
were written by the analysis as it stood then (commit fcb0d07), for the four writers of
``tsv_rows()`` and for a live study with a failed suggestion and a writer who stopped early."""

import pytest

from cyoa import store
from cyoa.cowriting.analysis.report import report
from cyoa.cowriting.analysis.tsv import import_tsv, write_cyoa_tsv
from tests.paths import DATA
from tests.study_builder import FIRST, SECOND, Turn, add_writer, make_experiment, story
from tests.study_builder import tsv_rows as rows

GOLDEN = DATA / "compat"
FORMATS = ("markdown", "csv", "json")


def live_study(db) -> None:
    """Three complete writers, one round with a failed suggestion, one writer who stopped."""
    make_experiment(db)
    add_writer(db, "w1", story((FIRST, SECOND), FIRST, "w1"), survey={"happy": 4, "useful": 3})
    add_writer(db, "w2", story((FIRST, SECOND), SECOND, "w2"), survey={"happy": 2, "useful": 5})
    turns = story((FIRST, SECOND), FIRST, "w3")
    turns[2] = Turn(
        turns[2].line,
        {FIRST: turns[2].suggestions[FIRST], SECOND: None},
        FIRST,
        FIRST,
        "a kept line.",
    )
    add_writer(db, "w3", turns, survey={"happy": 5})
    add_writer(db, "w4", story((FIRST, SECOND), SECOND, "w4")[:2])


@pytest.fixture(scope="module")
def databases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compat")
    imported = store.connect(folder / "imported.sqlite")
    store.init_db(imported)
    import_tsv(imported, write_cyoa_tsv(rows(), 5, 5), "study")
    live = store.connect(folder / "live.sqlite")
    live_study(live)
    yield {"study": imported, "exp": live}
    imported.close()
    live.close()


@pytest.mark.parametrize("experiment", ["study", "exp"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_compat_output_is_what_it_was(databases, experiment, fmt):
    text = report(databases[experiment], experiment, fmt, compat="cyoa-2021")
    assert text == (GOLDEN / f"{experiment}.{fmt}").read_text(encoding="utf-8")
