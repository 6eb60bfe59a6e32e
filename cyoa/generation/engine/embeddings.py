"""A model's tied embedding matrix kept in 8-bit blocks, exactly: a quarter of its float32
memory, the same numbers.

The packaged Gemma 3 270M comes from a GGUF file whose token embeddings (which are also its
output layer) are stored as Q8_0: blocks of 32 values, each an 8-bit integer ``q`` times one
float16 scale ``d`` per block. The converted checkpoint holds them de-quantized to float32,
262,144 × 640 values, 671 MB. As blocks they take 189 MB (168 MB of integers, 21 MB of scales
kept in float32), and they give back the float32 matrix bit for bit: ``d × q`` has at most
11 + 8 significant bits, so the float32 product is exact, whatever the order of operations.

- :meth:`BlockMatrix.exactly` recovers the blocks from a float32 matrix (a block's scale is its
  largest magnitude over 127, which is how Q8_0 writes it) and keeps them only if they give the
  matrix back bit for bit; conversion (:mod:`cyoa.generation.weights`) saves them beside the
  checkpoint (:func:`save_blocks`), checked once there.
- :func:`use_blocks` replaces the model's input embeddings and its tied output layer by
  :class:`BlockEmbedding` and :class:`BlockLinear`, which read the blocks; the float32 matrix
  is then never read from the checkpoint file. With ``packed_output`` the embeddings read
  the blocks and the output layer is the float32 matrix packed for oneDNN (SmolLM2).

Reading rows from the blocks (embedding lookups, and the exact rescoring of the vocabulary
screen's few hundred candidates) costs about what reading float32 rows does. A whole product
(nucleus-only sampling, or a row the screen could not prove) must de-quantize the entire
matrix, a chunk at a time, and is clearly slower than the float32 product. So the output
layer reads the blocks only where the vocabulary is screened
(:mod:`cyoa.generation.engine.vocabulary`); elsewhere it is packed.

Reference: ggml (llama.cpp), ``quantize_row_q8_0_ref`` and ``dequantize_row_q8_0`` in
``ggml-quants.c`` (the Q8_0 format: 32 values, ``d = max|x| / 127``, ``q = round(x / d)``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

# Values per block, as Q8_0.
BLOCK = 32
# The largest integer of a block: its largest magnitude is 127 × its scale.
LARGEST = 127
# The blocks, saved beside a converted checkpoint.
FILE_NAME = "embeddings-q8_0.safetensors"
# Rows de-quantized at a time for a whole product: 4,096 × 640 float32 values (10 MB) stay in
# the CPU's cache between de-quantizing and multiplying; much larger chunks do not.
CHUNK_ROWS = 4096


class BlockMatrix(torch.nn.Module):
    """A float32 matrix ``(rows, columns)`` held as int8 ``integers`` of the same shape and one
    float32 scale per block of ``BLOCK`` columns, ``scales`` ``(rows, columns / BLOCK)``."""

    def __init__(self, integers: torch.Tensor, scales: torch.Tensor) -> None:
        super().__init__()
        rows, columns = integers.shape
        if integers.dtype != torch.int8 or scales.dtype != torch.float32:
            raise ValueError("Blocks are int8 integers with float32 scales.")
        if columns % BLOCK or scales.shape != (rows, columns // BLOCK):
            raise ValueError(f"Expected {columns // BLOCK} scales per row of {columns} values.")
        self.register_buffer("integers", integers)
        self.register_buffer("scales", scales)

    @property
    def shape(self) -> torch.Size:
        return self.integers.shape

    @classmethod
    def exactly(cls, weight: torch.Tensor) -> BlockMatrix | None:
        """The blocks of the float32 matrix ``weight``, or None if blocks of 8-bit integers
        cannot give it back bit for bit (it did not come from Q8_0 weights, or its rows do
        not split into blocks)."""
        if weight.dtype != torch.float32 or weight.dim() != 2 or weight.shape[1] % BLOCK:
            return None
        integers = torch.empty(weight.shape, dtype=torch.int8)
        scales = torch.empty(weight.shape[0], weight.shape[1] // BLOCK)
        with torch.no_grad():
            for start in range(0, weight.shape[0], CHUNK_ROWS):
                rows = weight[start : start + CHUNK_ROWS]
                blocks = rows.reshape(rows.shape[0], -1, BLOCK)
                scale = blocks.abs().amax(dim=-1) / LARGEST
                divisor = torch.where(scale > 0, scale, 1.0).unsqueeze(-1)
                values = torch.round(blocks / divisor)
                if not torch.isfinite(values).all() or values.abs().max() > LARGEST:
                    return None
                integers[start : start + CHUNK_ROWS] = values.reshape(rows.shape).to(torch.int8)
                scales[start : start + CHUNK_ROWS] = scale
                back = _dequantized(integers[start : start + CHUNK_ROWS], scale)
                if not torch.equal(back, rows):
                    return None
        return cls(integers, scales)

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        """The float32 rows ``ids`` (any shape): ``(*ids.shape, columns)``."""
        flat = ids.reshape(-1)
        values = _dequantized(self.integers[flat], self.scales[flat])
        return values.reshape(*ids.shape, self.shape[1])

    def chunks(self) -> Iterator[tuple[int, torch.Tensor]]:
        """The whole float32 matrix, ``CHUNK_ROWS`` rows at a time: ``(first row, rows)``."""
        for start in range(0, self.shape[0], CHUNK_ROWS):
            stop = start + CHUNK_ROWS
            yield start, _dequantized(self.integers[start:stop], self.scales[start:stop])

    def product(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ matrix.T`` in float32 for ``x`` ``(..., columns)``: ``(..., rows)``."""
        flat = x.reshape(-1, self.shape[1]).float()
        out = torch.empty(flat.shape[0], self.shape[0])
        for start, rows in self.chunks():
            out[:, start : start + rows.shape[0]] = torch.nn.functional.linear(flat, rows)
        return out.reshape(*x.shape[:-1], self.shape[0])


def _dequantized(integers: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """``scale × q`` for every value: ``integers`` ``(n, columns)`` int8, ``scales``
    ``(n, columns / BLOCK)``."""
    blocks = integers.reshape(integers.shape[0], -1, BLOCK).float() * scales.unsqueeze(-1)
    return blocks.reshape(integers.shape)


class BlockEmbedding(torch.nn.Module):
    """An input embedding read from a :class:`BlockMatrix`: the rows of ``input_ids``, times
    the model's embedding scale where it has one (Gemma multiplies by √hidden size)."""

    def __init__(self, matrix: BlockMatrix, scale: torch.Tensor | None = None) -> None:
        super().__init__()
        self.matrix = matrix
        self.num_embeddings, self.embedding_dim = matrix.shape
        self.embed_scale = scale

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        rows = self.matrix.rows(input_ids)
        if self.embed_scale is not None:
            rows = rows * self.embed_scale.to(rows.dtype)
        return rows


class BlockLinear(torch.nn.Module):
    """An output layer without bias read from a :class:`BlockMatrix`: ``x @ matrix.T``."""

    def __init__(self, matrix: BlockMatrix) -> None:
        super().__init__()
        self.matrix = matrix
        self.out_features, self.in_features = matrix.shape
        self.bias = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.matrix.product(x)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 blocks"


def tied_matrix(model: Any) -> torch.Tensor | None:
    """The float32 matrix ``model`` uses both as input embeddings and as output layer, or None
    if its output layer is not tied to its input embeddings."""
    embeddings, head = model.get_input_embeddings(), model.get_output_embeddings()
    weight = getattr(embeddings, "weight", None)
    if not isinstance(weight, torch.Tensor) or getattr(head, "weight", None) is not weight:
        return None
    if type(embeddings) is not torch.nn.Embedding and not hasattr(embeddings, "embed_scale"):
        return None  # an embedding whose forward this module does not know how to repeat
    return weight if weight.dtype == torch.float32 else None


def save_blocks(model: Any, folder: Path) -> bool:
    """Save the blocks of ``model``'s tied embedding matrix as ``folder/FILE_NAME`` when they
    give the matrix back bit for bit; returns whether they were saved."""
    from safetensors.torch import save_file

    weight = tied_matrix(model)
    matrix = None if weight is None else BlockMatrix.exactly(weight.detach())
    if matrix is None:
        return False
    save_file({"integers": matrix.integers, "scales": matrix.scales}, str(Path(folder) / FILE_NAME))
    return True


def use_blocks(model: Any, folder: Path, min_entries: int = 0, packed_output: bool = False) -> bool:
    """Replace ``model``'s tied input embeddings and output layer by the blocks saved in
    ``folder`` (by :func:`save_blocks`), in place; returns whether it did (not when the file
    is missing, the model's matrix is not tied, or it has fewer than ``min_entries``
    entries).

    With ``packed_output``, the output layer is the float32 matrix laid out for oneDNN
    instead (:class:`~cyoa.generation.engine.packing.PackedLinear`): for a matrix small enough
    to be multiplied whole at every step (SmolLM2's 49,152 × 576): packed, a batch's product
    is faster than the plain float32 one (bench/results/layer-steps.md), and de-quantizing
    the blocks at every step would be slower still; a row's logits alone and in a batch
    agree to float32 rounding. The embeddings still come from the blocks, so the matrix is
    held once in float32 (packed) and once in 8 bits, not twice in float32."""
    from safetensors.torch import load_file

    from cyoa.generation.engine.packing import PackedLinear, packing_available

    path = Path(folder) / FILE_NAME
    weight = tied_matrix(model)
    if weight is None or weight.numel() < min_entries or not path.is_file():
        return False
    if packed_output and not packing_available():
        return False
    saved = load_file(str(path))
    # Copies: the loaded tensors view a memory map of the file, which would otherwise stay
    # mapped (and its pages counted twice once packing copies the model's tensors).
    matrix = BlockMatrix(saved["integers"].clone(), saved["scales"].clone())
    del saved
    if matrix.shape != weight.shape:
        raise ValueError(f"{path} holds a {tuple(matrix.shape)} matrix, not {tuple(weight.shape)}.")
    embeddings = model.get_input_embeddings()
    scale = getattr(embeddings, "embed_scale", None)
    scale = None if scale is None else torch.as_tensor(scale)
    if packed_output:
        model.set_output_embeddings(PackedLinear(model.get_output_embeddings()))
    else:
        model.set_output_embeddings(BlockLinear(matrix))
    model.set_input_embeddings(BlockEmbedding(matrix, scale))
    return True
