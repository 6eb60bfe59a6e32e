"""The llama.cpp settings that CYOA's reproducibility rests on, fixed here and nowhere else.

A suggestion's text must depend only on its prompt, its sampling and its seed: not on which
other writers' suggestions are decoded in the same step, not on a restart, and not on whether
the model has one core or two. With llama.cpp on the CPU that holds when every sequence has
its own KV stream (``kv_unified`` off: attention for a sequence reads only its own cells, in
the same order, whatever else is in the batch) and attention is computed by the flash
attention kernel (the other path multiplies a batch-wide masked matrix, whose rounding
depends on the batch); keys and values are stored in float16 in a full-size sliding-window
cache (``swa_full``), so that a long sequence never wraps around into cells in another order;
and the weights stay in the file's layout (``use_extra_bufts`` off, see :data:`MODEL`).
tests/generation/test_llamacpp_guarantee.py proves the property on the packaged models and
fails if a value below changes.
"""

from __future__ import annotations

from typing import Any

# llama.cpp's enum values (llama.h): LLAMA_FLASH_ATTN_TYPE_ENABLED, GGML_TYPE_F16.
FLASH_ATTENTION_ENABLED = 1
GGML_TYPE_F16 = 1

# llama_context_params fields fixed for the guarantee (see the module docstring).
GUARANTEE: dict[str, Any] = {
    "kv_unified": False,
    "flash_attn_type": FLASH_ATTENTION_ENABLED,
    "swa_full": True,
    "type_k": GGML_TYPE_F16,
    "type_v": GGML_TYPE_F16,
    "embeddings": False,
    "offload_kqv": False,
    "op_offload": False,
    "no_perf": True,
}
# llama_model_params fields: every layer on the CPU, the file mapped (not copied) into memory,
# and the weights kept in the file's own layout: the repacked layout (``use_extra_bufts``)
# multiplies four rows at a time in another order than one row alone, so Gemma's Q4_K layers
# gave a decoding row other logits in a batch of four than alone (the guarantee test caught it).
MODEL: dict[str, Any] = {
    "n_gpu_layers": 0,
    "use_mmap": True,
    "use_mlock": False,
    "use_extra_bufts": False,
}

# How many suggestions one model decodes at once (its KV streams), and how many tokens each
# may hold (prompt and continuation together), unless the card's options say otherwise. The
# longest prompt of a five-round story is nine turns of at most 260 characters: 2,348
# characters of English prose are 487 tokens for Gemma-3-270M and 486 for SmolLM2-135M, so
# with its 60-token continuation it fits in 768 tokens (room for 3.3 characters a token).
# The streams' memory is reserved when the model loads (about 23 kB a token for SmolLM2-135M,
# 18 kB for Gemma-3-270M: 16 rows × 768 tokens are 0.28 and 0.23 GB).
DEFAULT_ROWS = 16
DEFAULT_CONTEXT_TOKENS = 768
# llama.cpp rounds each stream's size up to a multiple of this.
CONTEXT_STEP = 256
# Tokens of one llama_decode call split into passes of at most this many.
UBATCH_TOKENS = 512
# The decoding rows' next tokens go to llama.cpp in calls of at most this many rows: from 8
# tokens a call llama.cpp multiplies Gemma-3-270M's layers with a kernel that rounds
# otherwise than for one token (measured: 1 to 7 rows gave a row's logits alone, 8 and more
# did not; SmolLM2-135M's were the same at every size), so a row beside many others would
# write another text. tests/generation/test_llamacpp_guarantee.py decodes one among 15.
DECODE_CALL_ROWS = 4


def context_settings(rows: int, context_tokens: int, threads: int) -> dict[str, Any]:
    """Every ``llama_context_params`` field CYOA sets for a model decoding up to ``rows``
    suggestions of up to ``context_tokens`` tokens each (a multiple of
    :data:`CONTEXT_STEP`) on ``threads`` threads: :data:`GUARANTEE` and the sizes."""
    if rows < 1:
        raise ValueError("rows must be at least 1.")
    if context_tokens < CONTEXT_STEP or context_tokens % CONTEXT_STEP:
        raise ValueError(f"context_tokens must be a positive multiple of {CONTEXT_STEP}.")
    return {
        **GUARANTEE,
        "n_ctx": rows * context_tokens,
        "n_seq_max": rows,
        # One call holds the decoding rows and at least one whole prompt.
        "n_batch": context_tokens + rows,
        "n_ubatch": UBATCH_TOKENS,
        # Only each row's last position is scored; reserving logits for every position of a
        # pass would take n_ubatch × vocabulary floats (half a gigabyte for Gemma).
        "n_outputs_max": rows,
        "n_threads": threads,
        "n_threads_batch": threads,
    }
