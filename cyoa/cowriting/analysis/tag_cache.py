"""The study database remembers each sentence's nouns and verbs once spaCy has tagged it.

Tagging is the slow part of the text metrics (about 1,000 sentences a second per core with
``en_core_web_sm``'s tagger and parser). A running study is analysed again and again — each
``analyze``, each refresh of the researcher's dashboard — while its sentences never change,
so the lemmas of every tagged sentence are kept in the ``sentence_tags`` table, keyed by the
tagger (pipeline, its version, spaCy's version) and the sentence. The next analysis tags only
the sentences written since. A sentence's lemmas depend on nothing else, so the numbers are
the same with or without the cache (tested); the ratings are applied afterwards, never stored.

The table is filled ahead of the analysis as well (:func:`tag_experiment`): ``import-tsv``
tags what it imports, and the app tags a study's sentences in the background while writers
write (:mod:`cyoa.cowriting.research.tagging`), so an ``analyze`` has little or nothing left to tag.
"""

from __future__ import annotations

import json
import logging

import sqlalchemy as sa

from cyoa import store
from cyoa.cowriting.analysis.data import experiment_language, experiment_pairs, load_study
from cyoa.cowriting.analysis.tables import writer_texts
from cyoa.db.facade import Db
from cyoa.db.transactions import write_transaction
from cyoa.metrics.text import Lemmas, tag_ahead, tagger_id
from cyoa.metrics.tokens import is_english

log = logging.getLogger(__name__)

# Rows written per transaction, so that a large first analysis never holds the database's
# write lock for long while writers are writing.
WRITE_CHUNK = 5000


class SentenceTagCache:
    """:class:`~cyoa.metrics.text.LemmaCache` in ``db``'s ``sentence_tags`` table."""

    def __init__(self, db: Db) -> None:
        self.db = db
        self._tagger = ""
        self.hits = 0
        self.stored = 0
        self.usable = True
        if "sentence_tags" not in db.table_names():
            try:
                store.ensure_sentence_tags(db)
            except sa.exc.OperationalError as error:
                # A read-only or busy database: analyse without the cache.
                log.warning("No cache of tagged sentences (%s); tagging everything.", error)
                self.usable = False

    @property
    def tagger(self) -> str:
        """The tagger's identity (loading spaCy the first time it is asked for)."""
        if not self._tagger:
            self._tagger = tagger_id()
        return self._tagger

    def lookup(self, sentences: list[str]) -> dict[str, Lemmas]:
        if not self.usable:
            return {}
        wanted = set(sentences)
        found: dict[str, Lemmas] = {}
        rows = self.db.execute(
            "SELECT sentence, nouns, verbs FROM sentence_tags WHERE tagger = ?", [self.tagger]
        )
        for sentence, nouns, verbs in rows:
            if sentence in wanted:
                found[sentence] = (tuple(json.loads(nouns)), tuple(json.loads(verbs)))
        self.hits += len(found)
        return found

    def store(self, tagged: dict[str, Lemmas]) -> None:
        """Keep ``tagged``; a database that stays locked (or is read-only) only means that
        the next analysis tags these sentences again, so the analysis goes on."""
        if not self.usable:
            return
        rows = [
            {
                "tagger": self.tagger,
                "sentence": sentence,
                "nouns": json.dumps(list(nouns)),
                "verbs": json.dumps(list(verbs)),
            }
            for sentence, (nouns, verbs) in tagged.items()
        ]
        for start in range(0, len(rows), WRITE_CHUNK):
            chunk = rows[start : start + WRITE_CHUNK]
            try:
                with write_transaction(self.db):
                    self.db.insert_all("sentence_tags", chunk, on_conflict="replace")
            except sa.exc.OperationalError as error:
                log.warning("Tagged sentences not kept (%s); the next analysis retags them.", error)
                return
            self.stored += len(chunk)


def tag_experiment(db: Db, experiment: str, workers: int = 1) -> int:
    """Tag, and keep in ``sentence_tags``, every sentence of ``experiment`` not tagged yet.

    The texts are the ones the text metrics read (per writer and pair of systems: each
    system's suggestions, and the writer's own lines;
    :func:`~cyoa.cowriting.analysis.tables.writer_texts`),
    split as they split them, so the next ``analyze`` finds them all. ``workers``: processes
    for the tagging. Returns how many sentences were tagged (0 when the table is unusable:
    a read-only database, or a study in another language than English, whose text is never
    tagged by the English model). Raises :class:`~cyoa.errors.AnalysisError` for an
    experiment that does not exist.
    """
    cache = SentenceTagCache(db)
    if not cache.usable or not is_english(experiment_language(db, experiment)):
        return 0
    texts = [
        text
        for pair in experiment_pairs(db, experiment)
        for source_texts in writer_texts(load_study(db, experiment, pair)).values()
        for text in source_texts
    ]
    return tag_ahead(texts, cache, n_process=workers)
