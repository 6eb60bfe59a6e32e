"""The fast GGUF header reader (cyoa/generation/gguf_reading.py) reads every field and tensor
as gguf's own reader does, and a conversion's readers of one file are one."""

from __future__ import annotations

import os

import gguf
import numpy as np
import pytest

from cyoa.generation.gguf_reading import FastReader, one_reader_per_file


@pytest.fixture
def gguf_file(tmp_path):
    """A small GGUF file with a value of every kind of field (strings, integers, floats, a
    bool, arrays of strings, integers and floats) and tensors of two types."""
    path = tmp_path / "small.gguf"
    writer = gguf.GGUFWriter(os.fspath(path), "llama")
    writer.add_string("general.name", "small — ünïcode")
    writer.add_uint32("llama.block_count", 2)
    writer.add_int64("test.negative", -7)
    writer.add_float32("llama.rope.freq_base", 10000.0)
    writer.add_float64("test.precise", 0.1)
    writer.add_bool("test.flag", True)
    writer.add_array("tokenizer.ggml.tokens", ["<s>", "a", "bc", "", "d e"])
    writer.add_array("tokenizer.ggml.token_type", [1, 2, 3, 1, 1])
    writer.add_array("tokenizer.ggml.scores", [0.0, -1.5, -2.25, 3.0, 0.5])
    rng = np.random.default_rng(0)
    writer.add_tensor("token_embd.weight", rng.standard_normal((5, 32)).astype(np.float32))
    writer.add_tensor("output_norm.weight", rng.standard_normal(32).astype(np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_fast_reader_reads_every_field_and_tensor_as_gguf_s_reader(gguf_file):
    slow, fast = gguf.GGUFReader(os.fspath(gguf_file)), FastReader(os.fspath(gguf_file))
    assert list(fast.fields) == list(slow.fields)
    for name, field in slow.fields.items():
        mine = fast.fields[name]
        assert (mine.offset, mine.types, mine.data) == (field.offset, field.types, field.data)
        assert [p.tobytes() for p in mine.parts] == [p.tobytes() for p in field.parts], name
        assert [p.dtype for p in mine.parts] == [p.dtype for p in field.parts], name
        assert mine.contents() == field.contents(), name
    assert fast.fields["tokenizer.ggml.tokens"].contents() == ["<s>", "a", "bc", "", "d e"]
    assert fast.fields["general.name"].contents() == "small — ünïcode"
    assert fast.fields["test.negative"].contents() == -7
    assert [t.name for t in fast.tensors] == ["token_embd.weight", "output_norm.weight"]
    for mine, theirs in zip(fast.tensors, slow.tensors, strict=True):
        assert (mine.tensor_type, list(mine.shape)) == (theirs.tensor_type, list(theirs.shape))
        assert np.array_equal(mine.data, theirs.data)
        assert type(mine.data) is np.ndarray  # a plain view, not a memmap


def test_within_a_conversion_each_file_is_parsed_once_and_the_reader_is_given_back_after(
    gguf_file, tmp_path
):
    other = tmp_path / "other.gguf"
    other.write_bytes(gguf_file.read_bytes())
    original = gguf.GGUFReader
    with one_reader_per_file():
        first = gguf.GGUFReader(os.fspath(gguf_file))
        assert isinstance(first, FastReader)
        assert gguf.GGUFReader(gguf_file) is first  # a Path and a str of one file
        assert gguf.GGUFReader(os.fspath(other)) is not first
        assert not isinstance(gguf.GGUFReader(os.fspath(gguf_file), "c"), FastReader)
    assert gguf.GGUFReader is original
