"""A converted model loaded into this process, streaming continuations: the engine's face.

:class:`LocalModel` loads a converted checkpoint folder (``config.json``, safetensors weights,
tokenizer files) with transformers, prepares it for the CPU (packed float32 layers, the
embedding matrix read from its exact 8-bit blocks, the screened vocabulary projection) and
streams continuations in one of two modes:

- ``batched``: a scheduler thread owns the model and decodes every request in one dynamic
  batch (:mod:`cyoa.generation.engine.scheduler`); different models run in parallel,
  sharing the cores (:mod:`cyoa.generation.engine.cores`).
- ``naive``: each continuation is generated alone, start to end, while every other naive
  generation in the process waits, whichever model it uses; the benchmarks' baseline.

Either way a prompt that begins with a text read before reads only the rest, from the
stored cache (:mod:`cyoa.generation.engine.prefixes`).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from cyoa.generation.engine.cores import CoreShare
from cyoa.generation.engine.embeddings import use_blocks
from cyoa.generation.engine.options import BATCHED, GENERATION_MODES
from cyoa.generation.engine.packing import pack_model, packing_available
from cyoa.generation.engine.prefixes import PrefixStore
from cyoa.generation.engine.rows import INCOMPLETE
from cyoa.generation.engine.sampling import sample_rows_from_hidden
from cyoa.generation.engine.scheduler import BatchScheduler
from cyoa.generation.engine.vocabulary import SCREEN_FROM_ENTRIES, Vocabulary
from cyoa.generation.types import Sampling

# Naive mode: one generation at a time in the whole process, whichever model it uses.
_ALONE = threading.Lock()


class LocalModel:
    """The model in ``folder`` (converted by :func:`cyoa.generation.weights.ensure_converted`),
    ready to stream. ``tokenizer`` is its tokenizer; ``dtype`` is ``"float32"`` or
    ``"bfloat16"``; ``quantize`` is ``""`` or ``"int8"`` (every linear layer dynamically
    quantized to 8 bits); ``mode`` is ``batched`` or ``naive``; ``cores`` the cores the
    batched models share (None: the process's torch thread setting); ``prefixes`` the store
    of texts this model has read.

    In float32 a continuation depends only on its prompt, sampling and seed, on one machine:
    a row's logits in a batch match its logits alone to float32 rounding, so a sampled token
    can differ only in a near-tie. bfloat16 and int8 round differently per batch shape.
    """

    def __init__(
        self,
        folder: Path,
        tokenizer: Any,
        *,
        name: str,
        dtype: str = "float32",
        quantize: str = "",
        mode: str = BATCHED,
        cores: CoreShare | None = None,
        prefixes: PrefixStore | None = None,
    ) -> None:
        from transformers import AutoModelForCausalLM

        if mode not in GENERATION_MODES:
            raise ValueError(
                f"Generation mode {mode!r} is unknown; use one of: {', '.join(GENERATION_MODES)}."
            )
        model = AutoModelForCausalLM.from_pretrained(
            folder, local_files_only=True, dtype=getattr(torch, dtype)
        )
        model.eval()
        if quantize == "int8":
            model = _quantize_int8(model)
        elif dtype == "float32":
            # A large tied matrix (Gemma's) is read from its exact 8-bit blocks, a quarter of
            # the memory, where the bfloat16 vocabulary screen spares the whole product. A
            # smaller one (SmolLM2's), or any on a CPU without oneDNN's bfloat16 products
            # (where the screen would cost more than the whole float32 product), is
            # multiplied whole at every step: packed for oneDNN, embeddings from the blocks.
            screened = packing_available(torch.bfloat16) and use_blocks(
                model, folder, min_entries=SCREEN_FROM_ENTRIES
            )
            if not screened:
                use_blocks(model, folder, packed_output=True)
            pack_model(model)
        self.model = model
        self.tokenizer = tokenizer
        self.stop_ids, banned = special_tokens(model, tokenizer)
        self.vocabulary = Vocabulary(model, banned)
        self.prefixes = prefixes if prefixes is not None else PrefixStore()
        self._scheduler: BatchScheduler | None = None
        if mode == BATCHED:
            self._scheduler = BatchScheduler(
                model,
                tokenizer,
                self.stop_ids,
                self.vocabulary,
                name=name,
                cores=cores,
                prefixes=self.prefixes,
            )
            self._scheduler.start()

    @property
    def rows(self) -> int:
        """How many continuations are decoding together now (0 in naive mode)."""
        return 0 if self._scheduler is None else self._scheduler.rows

    def close(self) -> None:
        """End the batching thread after its current step, so that nothing holds the model
        once the app lets go of it (naive mode has no thread)."""
        if self._scheduler is not None:
            self._scheduler.close()

    def stream(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        """Yield the continuation of ``prompt``, exactly one piece per generated token (a
        piece is empty while a token only starts a multi-byte character), until an
        end-of-text token or ``sampling.max_new_tokens`` tokens. Closing the iterator early
        stops the generation (in batched mode the row leaves the batch)."""
        if self._scheduler is not None:
            return self._scheduler.stream(prompt, sampling, seed)
        return self._stream_alone(prompt, sampling, seed)

    def _stream_alone(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        """Naive mode: the whole continuation while holding the process-wide lock."""
        generator = torch.Generator().manual_seed(seed)
        decoder = self.model.get_decoder()
        with _ALONE, torch.inference_mode():
            ids = self.tokenizer(prompt).input_ids
            prefix = self.prefixes.longest(ids)
            read = 0 if prefix is None else len(prefix.ids)
            past = None if prefix is None else prefix.cache_copy()
            input_ids = torch.tensor([ids[read:]])
            generated: list[int] = []
            fed = list(ids[:read])  # the tokens ``past`` holds
            shown = ""
            try:
                for _ in range(sampling.max_new_tokens):
                    if input_ids.shape[1]:
                        output = decoder(input_ids=input_ids, past_key_values=past, use_cache=True)
                        fed += input_ids[0].tolist()
                        # Only the last position is scored (the vocabulary projection of a
                        # whole prompt would cost more than the layers).
                        hidden, past = output.last_hidden_state[:, -1], output.past_key_values
                    else:  # the whole prompt was read before
                        hidden = prefix.hidden.unsqueeze(0)
                    if not generated:
                        self.prefixes.put(ids, past, hidden[0].clone())
                    token_id = sample_rows_from_hidden(
                        hidden, [sampling], [generator], self.vocabulary
                    )[0]
                    if token_id in self.stop_ids:
                        return
                    generated.append(token_id)
                    text = self.tokenizer.decode(
                        generated, skip_special_tokens=True, clean_up_tokenization_spaces=False
                    )
                    input_ids = torch.tensor([[token_id]])
                    if text.endswith(INCOMPLETE):
                        yield ""
                        continue
                    piece, shown = text[len(shown) :], text
                    yield piece
            finally:
                # What it generated is kept too, as the batched scheduler keeps a leaving
                # row's.
                if len(fed) > len(ids):
                    self.prefixes.put(fed, past, None, len(ids))


def _quantize_int8(model: Any) -> Any:
    """``model`` with every linear layer replaced by an 8-bit dynamically quantized one
    (weights per output channel, activations per batch)."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():
        # torch.ao's dynamic quantization is deprecated in favour of torchao, which is not a
        # dependency; the pinned torch still ships it and it works. The warnings are noise.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        return quantize_dynamic(
            model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
        )


def special_tokens(model: Any, tokenizer: Any) -> tuple[frozenset[int], torch.Tensor]:
    """The token ids that end a continuation, and the ids it may never contain.

    A continuation ends at any end-of-text id the model declares and at the tokenizer's
    named special tokens (end of document, padding, a chat turn). The other added tokens
    are never sampled: they are markup that has no place in a story sentence (Gemma has over
    6,000, such as ``<start_of_image>``, ``<h1>`` and ``<unused0>``), except its tokens made
    only of newlines, which are ordinary text.
    """
    stop: set[int] = set(tokenizer.all_special_ids)
    for source in (model.config, model.generation_config):
        eos = getattr(source, "eos_token_id", None)
        if isinstance(eos, int):
            stop.add(eos)
        elif eos:
            stop.update(eos)
    banned = sorted(
        token_id
        for token_id, token in tokenizer.added_tokens_decoder.items()
        if token_id not in stop and token.content.strip()
    )
    return frozenset(stop), torch.tensor(banned, dtype=torch.long)
