"""Linear layers with their weights laid out once for oneDNN, the CPU matrix library that
ships inside torch.

A float32 ``nn.Linear`` on the CPU multiplies through MKL's general matrix product, which
reads the weight in its stored order at every call. :class:`PackedLinear` reorders the weight
once, at load, into the blocked layout oneDNN's kernels read fastest, and multiplies through
oneDNN. A decoding step of several rows is then faster, while a lone row's step is a little
slower; the app's batches usually hold several writers' rows, so the decoder's layers are
packed (bench/results/layer-steps.md).

The weight is replaced, not copied. But transformers reads the weights through a memory map of
their file, and the file stays mapped while any tensor still views it (the embeddings do), so
the pages of the replaced weights would stay resident too. :func:`pack_model` therefore
copies the remaining tensors into the process's own memory, which unmaps the file.

The result is the same product in float32, up to float32 rounding: oneDNN sums in another
order than MKL. A row's hidden states alone and in a batch agree to float32 rounding too.
oneDNN's kernels mostly sum each row in the same order whatever the other rows, but the
kernel it picks depends on the batch's shape and on the CPU (AMX, AVX-512, AVX2; a one-row
step takes its own path), so nothing closer than rounding is promised.

Only float32 layers are packed (the ``bfloat16`` and ``int8`` card options have their own
kernels), and only where torch was built with oneDNN; elsewhere the model is left as it is.
The operators are torch's own (``torch.ops.mkldnn``, what ``torch.compile`` uses for the
same purpose on the CPU), not a public API: :func:`packing_available` checks for them.
"""

from __future__ import annotations

import functools

import torch

# The batch size oneDNN is told to expect when it chooses the layout: a typical batch of
# writers (the layout serves any number of rows).
EXPECTED_ROWS = 16


@functools.cache
def packing_available(dtype: torch.dtype = torch.float32) -> bool:
    """Whether this torch and this CPU pack and multiply ``dtype`` weights through oneDNN.

    Tried on a small matrix rather than assumed: oneDNN's bfloat16 products need AVX-512
    (BW, VL, DQ) or AVX-NE-CONVERT, which many x86-64 CPUs (AVX2 only) lack."""
    if not torch.backends.mkldnn.is_available():
        return False
    try:
        weight = torch.ones(EXPECTED_ROWS, EXPECTED_ROWS, dtype=dtype)
        packed = torch.ops.mkldnn._reorder_linear_weight(weight, EXPECTED_ROWS)
        torch.ops.mkldnn._linear_pointwise(weight, packed, None, "none", [], "")
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
    for Gemma's 262,144 × 640 matrix it is clearly faster than ``torch.nn.functional.linear``
    on the plain bfloat16 matrix and, like it, sums the bfloat16 products in float32, so its
    scores stay within the screen's proven bound."""

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
        own_tensors(model)
    return packed


def own_tensors(model: torch.nn.Module) -> None:
    """Copy every tensor of ``model`` that may still view its checkpoint's memory map into
    the process's own memory, so that the file is unmapped (see above)."""
    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            if not tensor.is_mkldnn:
                tensor.data = tensor.data.clone()


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
