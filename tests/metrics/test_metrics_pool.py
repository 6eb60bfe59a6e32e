"""Batched and parallel metric computation gives the values of the one-text functions."""

from functools import partial

import pytest

from cyoa.metrics import text as text_metrics
from cyoa.metrics.edit import _edit_metrics_chunk, edit_metrics, edit_metrics_many
from cyoa.metrics.pool import map_chunks
from cyoa.metrics.text import (
    concreteness,
    distinct_n,
    mean_sentence_length,
    split_sentences,
    split_sentences_many,
    text_profiles,
)

TEXTS = [
    "The dog chased the ball. She felt a strange zorblax in the tower!",
    "",
    "Mr. Smith went to Washington. He has walked home.",
    "The dog chased the ball. She felt a strange zorblax in the tower!",
]
PAIRS = [("The old knight drew a sword.", "The knight drew his sword."), ("", ""), ("a", "b")]


def test_map_chunks_in_worker_processes_keeps_order_and_values():
    func = partial(_edit_metrics_chunk, variant="cyoa-2021")
    pairs = PAIRS * 3
    assert map_chunks(func, pairs, n_process=2, chunk_size=2) == [
        edit_metrics(o, e) for o, e in pairs
    ]


def test_tagging_in_worker_processes_matches_one_process():
    sentences = [s for text in TEXTS for s in split_sentences(text)]
    in_process = text_metrics._tag_lemmas(sentences)
    func = partial(text_metrics._tag_lemmas, batch_size=2)
    assert map_chunks(func, sentences, n_process=2, chunk_size=2) == in_process


def test_map_chunks_refuses_empty_chunks():
    with pytest.raises(ValueError, match="chunk_size"):
        map_chunks(list, [1], chunk_size=0)


def test_edit_metrics_many_is_edit_metrics_of_each_pair():
    assert edit_metrics_many(PAIRS, "storium") == [edit_metrics(o, e, "storium") for o, e in PAIRS]


def test_split_sentences_many_is_split_sentences_of_each_text():
    assert split_sentences_many(TEXTS, batch_size=1) == [split_sentences(t) for t in TEXTS]


def test_text_profiles_are_the_one_text_metrics():
    for text, profile in zip(TEXTS, text_profiles(TEXTS, batch_size=2), strict=True):
        assert profile.mean_sentence_length == mean_sentence_length(text)
        assert profile.distinct_1 == distinct_n(text, 1)
        assert profile.distinct_3 == distinct_n(text, 3)
        assert profile.concreteness == concreteness(text)
