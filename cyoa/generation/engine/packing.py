"""Linear layers with their weights laid out once for oneDNN, the CPU matrix library that
ships inside torch.

A float32 ``nn.Linear`` on the CPU multiplies through MKL's general matrix product, which
reads the weight in its stored order at every call. :class:`PackedLinear` reorders the weight
once, at load, into the blocked layout oneDNN's kernels read fastest, and multiplies through
oneDNN. Measured on this machine (bench/results/load.md, step 11): a decoding step of
Gemma 3 270M's layers for 4 rows 78 → 54 ms on one thread, and for 16 rows on two threads
83 → 54 ms; SmolLM2 likewise.

The weight is replaced, not copied. But transformers reads the weights through a memory map of
their file, and the file stays mapped while any tensor still views it (the embeddings do):
the pages of the replaced weights would stay resident too (measured: +0.8 GB for both
models). :func:`pack_model` therefore copies the remaining tensors into the process's own
memory, which unmaps the file.

The result is the same product in float32 (it differs from MKL's by float32 rounding, about
1e-4 on hidden states of magnitude 10–100). Measured on both packaged models: the hidden
states of prompts read together are bit for bit those of each read alone, with one thread or
two, which MKL's product does not give (up to 9e-5 apart). A lone row's one-token step can
still differ in the last bit (oneDNN's one-row kernel for a 2,048-wide input), so decoding
alone and in a batch agree to float32 rounding (bench/results/load.md, step 30).

Only float32 layers are packed (the ``bfloat16`` and ``int8`` card options have their own
kernels), and only where torch was built with oneDNN; elsewhere the model is left as it is.
The operators are torch's own (``torch.ops.mkldnn``, what ``torch.compile`` uses for the
same purpose on the CPU), not a public API: :func:`packing_available` checks for them.
"""

from __future__ import annotations

import torch

# The batch size oneDNN is told to expect when it chooses the layout: a typical batch of
# writers (the layout serves any number of rows; measured from 1 to 16).
EXPECTED_ROWS = 16


def packing_available() -> bool:
    """Whether this torch has oneDNN and its linear-layer packing operators."""
    if not torch.backends.mkldnn.is_available():
        return False
    try:
        torch.ops.mkldnn._reorder_linear_weight  # noqa: B018 - resolving the operator is the check
        torch.ops.mkldnn._linear_pointwise  # noqa: B018
    except (AttributeError, RuntimeError):
        return False
    return True


class PackedLinear(torch.nn.Module):
    """``linear`` (a float32 ``nn.Linear``) with its weight reordered for oneDNN: the same
    function, ``x @ weight.T + bias``, for inputs of any number of leading dimensions."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        weight = linear.weight.detach()
        self.register_buffer(
            "packed_weight", torch.ops.mkldnn._reorder_linear_weight(weight, EXPECTED_ROWS)
        )
        bias = None if linear.bias is None else linear.bias.detach()
        self.register_buffer("bias", bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.packed_weight, self.bias, "none", [], "")

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, packed"


class PackedMatrix:
    """``x @ weight.T`` (no bias) through oneDNN, for a float32 or bfloat16 ``weight``
    reordered once; the reordered copy replaces the weight (the caller drops its own).

    Used for the bfloat16 screen of the vocabulary (:mod:`cyoa.generation.engine.vocabulary`):
    Gemma's 262,144 × 640 matrix, one thread, 1 to 16 rows: 29 ms against 50 ms for
    ``torch.nn.functional.linear`` on the plain bfloat16 matrix (the same scores: oneDNN sums
    the bfloat16 products in float32 either way)."""

    def __init__(self, weight: torch.Tensor) -> None:
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, EXPECTED_ROWS)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, None, "none", [], "")


def pack_model(model: torch.nn.Module) -> int:
    """Pack the linear layers of ``model``'s decoder (a transformers causal LM), then own every
    other weight outright (see above); returns how many layers were packed. The output layer
    is not packed: it is often tied to the input embeddings, and the vocabulary screen
    (:mod:`cyoa.generation.engine.vocabulary`) reads it."""
    packed = pack_linear_layers(model.get_decoder())
    if packed:
        with torch.no_grad():
            for tensor in [*model.parameters(), *model.buffers()]:
                if not tensor.is_mkldnn:
                    tensor.data = tensor.data.clone()
    return packed


def pack_linear_layers(module: torch.nn.Module) -> int:
    """Replace every float32 ``nn.Linear`` inside ``module`` by a :class:`PackedLinear`, in
    place; returns how many were replaced (0 where :func:`packing_available` is false).

    Pass a model's decoder, not the whole model: the output layer of a model that ties it to
    its input embeddings would otherwise be stored twice."""
    if not packing_available():
        return 0
    replaced = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear and child.weight.dtype == torch.float32:
                setattr(parent, name, PackedLinear(child))
                replaced += 1
    return replaced
