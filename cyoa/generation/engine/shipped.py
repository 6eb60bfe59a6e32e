"""Linear layers computed from a GGUF file's 4-bit blocks as shipped, not from their float32
expansion.

A GGUF file's Q4_1 and Q4_K tensors are affine per group of 32 values: each value is a 4-bit
integer ``q`` (0–15) times the group's scale plus the group's offset,

- Q4_1 (blocks of 32): ``w = d·q + m``, with ``d`` and ``m`` float16;
- Q4_K (super-blocks of 256 in 8 groups of 32): ``w = (d·sc)·q − (dmin·mn)``, with ``d`` and
  ``dmin`` float16 and 6-bit ``sc`` and ``mn`` per group.

torch's CPU weight-only int4 kernel (``torch.ops.aten._weight_int4pack_mm_for_cpu``) computes
``x @ w.T`` with ``w = (q − 8)·scale + zero`` per group of 32 columns, reading half a byte per
value. With float32 activations its scales and zeros are float32, so the file's groups go in
without re-quantising: ``scale`` is the group's scale (exact: at most 11 + 6 significant bits)
and ``zero = offset + 8·scale``, the one sum that may round (to float32). The weights the kernel
multiplies then differ from ``gguf.quants.dequantize`` of the same tensor by float32 rounding
(bench/results/weights-as-shipped.md gives the largest difference).

The file's other formats (Q5_0, Q6_K, Q8_0) have 5 to 8 bits per value, which the 4-bit kernel
cannot hold; those layers stay float32. The kernel needs a layer's output size divisible by 16.

References: ggml (llama.cpp), ``dequantize_row_q4_1`` and ``dequantize_row_q4_K`` with
``get_scale_min_k4`` in ``ggml-quants.c`` (the formats); the ``gguf`` package's
``gguf.quants`` (the same in NumPy, used by the tests as the reference).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

# Values per group: the kernel's smallest group, and the groups of both formats.
GROUP = 32
# The kernel's integers are 0–15 around a midpoint of 8.
MIDPOINT = 8
# Bytes per block: Q4_1 (d, m, 16 bytes of nibbles), Q4_K (d, dmin, 12 bytes of 6-bit scales
# and minimums, 128 bytes of nibbles).
Q4_1_BYTES, Q4_K_BYTES = 20, 144
# The GGUF names of a decoder layer's linear tensors and the attribute path of the same
# layer in a transformers Llama or Gemma 3 decoder layer.
LAYER_TENSORS = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
# The largest difference allowed between a layer's float32 weight and the same weight
# computed from the file's groups when they are matched at load: float32 rounding of the
# offsets, far below the smallest step of a 4-bit group.
MATCH_TOLERANCE = 1e-5


@dataclass(frozen=True)
class Groups:
    """A ``(rows, columns)`` matrix as ``scales[r, g] · integers[r, c] + offsets[r, g]`` for
    column ``c`` in group ``g = c // GROUP``: ``integers`` uint8 0–15, ``scales`` and
    ``offsets`` float32 ``(rows, columns / GROUP)``."""

    integers: torch.Tensor
    scales: torch.Tensor
    offsets: torch.Tensor

    def dequantized(self) -> torch.Tensor:
        """The float32 matrix, computed as ``gguf.quants`` does (scale × q, plus offset)."""
        rows, columns = self.integers.shape
        values = self.integers.reshape(rows, -1, GROUP).float() * self.scales.unsqueeze(-1)
        return (values + self.offsets.unsqueeze(-1)).reshape(rows, columns)

    def rows_taken(self, order: torch.Tensor) -> Groups:
        """The same groups with their rows in ``order``."""
        return Groups(self.integers[order], self.scales[order], self.offsets[order])


def _nibbles(packed: np.ndarray) -> np.ndarray:
    """``(..., n)`` bytes → ``(..., 2n)`` integers: the low nibbles, then the high nibbles."""
    return np.concatenate([packed & 0x0F, packed >> 4], axis=-1)


def _half(raw: np.ndarray) -> np.ndarray:
    """Two bytes per entry on the last axis → float16 values as float32."""
    return np.ascontiguousarray(raw).view(np.float16)[..., 0].astype(np.float32)


def q4_1_groups(raw: np.ndarray) -> Groups:
    """The groups of a Q4_1 tensor stored as ``raw`` bytes ``(rows, blocks × 20)``."""
    rows = raw.shape[0]
    blocks = raw.reshape(rows, -1, Q4_1_BYTES)
    scales, offsets = _half(blocks[..., 0:2]), _half(blocks[..., 2:4])
    integers = _nibbles(blocks[..., 4:]).reshape(rows, -1)
    return _groups(integers, scales, offsets)


def _scale_min_k4(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K's 12 bytes per super-block → its 8 six-bit scales and 8 six-bit minimums
    (ggml's ``get_scale_min_k4``): groups 0–3 in the low 6 bits of bytes 0–3 and 4–7, groups
    4–7 in the nibbles of bytes 8–11 with their top 2 bits in bytes 0–3 and 4–7."""
    low, high, extra = packed[..., 0:4], packed[..., 4:8], packed[..., 8:12]
    scales = np.concatenate([low & 0x3F, (extra & 0x0F) | ((low >> 2) & 0x30)], axis=-1)
    minimums = np.concatenate([high & 0x3F, (extra >> 4) | ((high >> 2) & 0x30)], axis=-1)
    return scales.astype(np.float32), minimums.astype(np.float32)


def q4_k_groups(raw: np.ndarray) -> Groups:
    """The groups of a Q4_K tensor stored as ``raw`` bytes ``(rows, super-blocks × 144)``."""
    rows = raw.shape[0]
    blocks = raw.reshape(rows, -1, Q4_K_BYTES)
    d, dmin = _half(blocks[..., 0:2]), _half(blocks[..., 2:4])
    scales, minimums = _scale_min_k4(blocks[..., 4:16])
    # Each 32 bytes of nibbles hold two groups: the low nibbles, then the high nibbles.
    integers = _nibbles(blocks[..., 16:].reshape(rows, -1, 4, 32)).reshape(rows, -1)
    return _groups(
        integers,
        (d[..., None] * scales).reshape(rows, -1),
        -(dmin[..., None] * minimums).reshape(rows, -1),
    )


def _groups(integers: np.ndarray, scales: np.ndarray, offsets: np.ndarray) -> Groups:
    return Groups(
        torch.from_numpy(np.ascontiguousarray(integers, dtype=np.uint8)),
        torch.from_numpy(np.ascontiguousarray(scales, dtype=np.float32)),
        torch.from_numpy(np.ascontiguousarray(offsets, dtype=np.float32)),
    )


# The readers of the formats the 4-bit kernel holds exactly, by GGUF type name.
READERS = {"Q4_1": q4_1_groups, "Q4_K": q4_k_groups}


def tensor_groups(tensor: Any) -> Groups | None:
    """The groups of a ``gguf.GGUFReader`` tensor, or None if its format is not 4-bit
    affine (:data:`READERS`)."""
    reader = READERS.get(tensor.tensor_type.name)
    return None if reader is None else reader(np.asarray(tensor.data))


@functools.cache
def int4_available() -> bool:
    """Whether this torch has the CPU weight-only int4 kernel with float32 scales (tried on
    a small matrix, not assumed: the operators are torch internals)."""
    try:
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(
            torch.zeros(16, GROUP, dtype=torch.int32), 1
        )
        zeros = torch.zeros(1, 16, 2)
        torch.ops.aten._weight_int4pack_mm_for_cpu(torch.zeros(1, GROUP), packed, GROUP, zeros)
    except (AttributeError, RuntimeError):
        return False
    return True


class Int4Linear(torch.nn.Module):
    """A linear layer ``x @ w.T (+ bias)`` whose weight ``w`` is held as the file's 4-bit
    :class:`Groups` (half a byte per value, plus a scale and a zero per 32 values) and
    multiplied by torch's CPU int4 kernel, taking and giving float32.

    ``compute`` is the kernel's number format: ``torch.float32`` multiplies the file's
    weights exactly (scales and zeros in float32); ``torch.bfloat16`` rounds the inputs, the
    scales, the zeros and the outputs to bfloat16 (8 significant bits). torch's CPU build
    vectorises only the bfloat16 kernel; its float32 kernel is many times slower than a
    float32 product (bench/results/weights-as-shipped.md)."""

    def __init__(
        self,
        groups: Groups,
        bias: torch.Tensor | None = None,
        compute: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.compute = compute
        self.out_features, self.in_features = groups.integers.shape
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(
            groups.integers.to(torch.int32), 1
        )
        zeros = groups.offsets + MIDPOINT * groups.scales
        # The kernel's layout: (columns / GROUP, rows, [scale, zero]).
        scales_and_zeros = torch.stack([groups.scales.T, zeros.T], dim=-1).to(compute)
        self.register_buffer("packed_weight", packed)
        self.register_buffer("scales_and_zeros", scales_and_zeros)
        self.register_buffer("bias", bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(self.compute).contiguous()
        out = torch.ops.aten._weight_int4pack_mm_for_cpu(
            flat, self.packed_weight, GROUP, self.scales_and_zeros
        ).float()
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*x.shape[:-1], self.out_features)

    def weight_as_multiplied(self) -> torch.Tensor:
        """The float32 weight the kernel multiplies (the product with the identity)."""
        return self.forward(torch.eye(self.in_features)).T.contiguous()

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"int4 groups, {str(self.compute).removeprefix('torch.')}"
        )


def _heads_order(rows: int, heads: int) -> torch.Tensor:
    """The row order transformers gives a Llama query or key matrix read from GGUF
    (``_reverse_permute_weights``: llama.cpp interleaves each head's rotary halves)."""
    half = rows // heads // 2
    return torch.arange(rows).reshape(heads, half, 2).transpose(1, 2).reshape(rows)


def _matching(groups: Groups, weight: torch.Tensor, config: Any, name: str) -> Groups | None:
    """``groups`` in the row order of the float32 ``weight`` they were expanded into, or None
    if no known order gives it back within :data:`MATCH_TOLERANCE`."""
    candidates = [groups]
    heads = {
        "attn_q": config.num_attention_heads,
        "attn_k": getattr(config, "num_key_value_heads", config.num_attention_heads),
    }.get(name)
    if heads:
        candidates.append(groups.rows_taken(_heads_order(groups.integers.shape[0], heads)))
    for candidate in candidates:
        if candidate.integers.shape != weight.shape:
            continue
        if (candidate.dequantized() - weight).abs().max().item() <= MATCH_TOLERANCE:
            return candidate
    return None


def use_shipped_weights(model: Any, gguf_file: Path, compute: torch.dtype = torch.bfloat16) -> int:
    """Replace the decoder's linear layers whose tensors ``gguf_file`` stores in a 4-bit
    affine format (:data:`READERS`) by :class:`Int4Linear` layers read from those blocks,
    multiplying in ``compute`` (bfloat16: the kernel torch vectorises), in place; returns
    how many were replaced (0 where the kernel is missing).

    Whatever ``compute``, the kernel's product for a row does not depend on its batch mates
    or on the thread count (tests/generation/test_generation_shipped.py). But the model's other
    layers agree alone and in a batch only to float32 rounding, and bfloat16 inputs turn
    such a difference into a bfloat16 step now and then: in bfloat16 a row's text can depend on
    its batch, as with the ``bfloat16`` dtype option.

    ``model`` is the float32 model converted from that file: each layer is replaced only if
    the file's groups give its weight back (rows reordered as transformers reorders them);
    a layer that does not match raises ``ValueError`` naming it, since the file is then not
    the one the model was converted from."""
    from gguf import GGUFReader

    if not int4_available():
        return 0
    layers = model.get_decoder().layers
    replaced = 0
    for tensor in GGUFReader(str(gguf_file)).tensors:
        parts = tensor.name.split(".")
        if len(parts) != 4 or parts[0] != "blk" or parts[2] not in LAYER_TENSORS:
            continue
        groups = tensor_groups(tensor)
        if groups is None or groups.integers.shape[0] % 16:
            continue
        parent = layers[int(parts[1])]
        *path, attribute = LAYER_TENSORS[parts[2]].split(".")
        for step in path:
            parent = getattr(parent, step)
        linear = getattr(parent, attribute)
        matched = _matching(groups, linear.weight.detach(), model.config, parts[2])
        if matched is None:
            raise ValueError(
                f"{gguf_file} tensor {tensor.name} does not give back the model's "
                f"{LAYER_TENSORS[parts[2]]} weight: convert the model from this file again."
            )
        bias = None if linear.bias is None else linear.bias.detach().clone()
        setattr(parent, attribute, Int4Linear(matched, bias, compute))
        replaced += 1
    return replaced
