"""The local backend: a packaged model run in this process with transformers on the CPU.

torch and transformers are imported only when a model is loaded or configured: importing
them takes seconds, and the web pages, the command line and the fake backend do not need them.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cyoa.generation.prefixes import DEFAULT_MAX_TOKENS, PrefixStore
from cyoa.generation.types import ModelCard, Sampling
from cyoa.generation.weights import ensure_converted, force_offline, load_tokenizer

if TYPE_CHECKING:
    from cyoa.generation.cores import CoreShare
    from cyoa.generation.scheduler import BatchScheduler

BATCHED, NAIVE = "batched", "naive"
GENERATION_MODES = (BATCHED, NAIVE)
QUANTIZE_OPTIONS = ("", "int8")
DTYPES = ("float32", "bfloat16")
# Naive mode: one generation at a time in the whole process, whichever model it uses.
_ALONE = threading.Lock()
# Warm-up at load: two tokens of a short continuation, so that the first writer does not pay
# for the one-time set-up of the kernels (measured: ~50 ms less to the first token of the
# first request, for ~0.3 s more at start).
_WARM_UP_PROMPT = "The lighthouse keeper found a letter on the rocks."
_WARM_UP_TOKENS = 2


def configure_torch_threads(threads: int) -> None:
    """Set how many CPU threads one torch operation may use (process-wide).

    Each model generates on its own Python thread, so with two models working at once the
    process uses about ``2 × threads`` cores; on a 2-core machine ``threads=1`` avoids the
    two models fighting over the same cores.
    """
    if threads < 1:
        raise ValueError("threads must be at least 1.")
    import torch

    torch.set_num_threads(threads)


class TransformersBackend:
    """A packaged model loaded from the model cache (converted from its GGUF file on first
    use), continuing text token by token with a KV cache.

    ``mode`` says how requests share the model:

    - ``batched`` (the default): a scheduler thread owns the model and decodes every
      request in one dynamic batch (:mod:`cyoa.generation.scheduler`); different models
      (different backends) run in parallel, sharing ``cores`` when given
      (:mod:`cyoa.generation.cores`).
    - ``naive``: each continuation is generated alone, start to end, while every other
      generation in the process waits, whichever model it uses. The benchmark's baseline.

    Either way a prompt that begins with one read before reads only the rest, from the
    stored cache (:mod:`cyoa.generation.prefixes`; at most ``prefix_tokens`` tokens kept).

    In float32 either way a continuation depends only on its prompt, sampling and seed (in
    batched mode up to floating-point rounding of the batched products, which changes a
    sampled token only in rare near-ties). Card options: ``dtype = "bfloat16"`` loads the
    weights in bfloat16 (default ``"float32"``; faster in batches, but a row's rounding, and
    so its text, then depends on its batch); ``quantize = "int8"`` quantizes every linear
    layer to 8-bit integers at load (dynamic quantization, per output channel). Their speed
    and their effect on the text are measured in bench/results/model-options.md. In float32
    the layers' weights are packed for oneDNN at load (:mod:`cyoa.generation.packing`).
    """

    def __init__(
        self,
        card: ModelCard,
        cache_dir: Path,
        mode: str = BATCHED,
        cores: CoreShare | None = None,
        prefix_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        if mode not in GENERATION_MODES:
            raise ValueError(
                f"Generation mode {mode!r} is unknown; use one of: {', '.join(GENERATION_MODES)}."
            )
        self.quantize = card.options.get("quantize", "")
        if self.quantize not in QUANTIZE_OPTIONS:
            raise ValueError(
                f'Model card {card.name!r}: options.quantize must be "int8" or left out '
                f"(found {self.quantize!r})."
            )
        self.dtype = card.options.get("dtype", "float32")
        if self.dtype not in DTYPES:
            raise ValueError(
                f'Model card {card.name!r}: options.dtype must be "float32" or "bfloat16" '
                f"(found {self.dtype!r})."
            )
        self.card = card
        self.cache_dir = Path(cache_dir)
        self.mode = mode
        self.cores = cores
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._stop_ids: frozenset[int] = frozenset()
        self._vocabulary: Any = None
        self._scheduler: BatchScheduler | None = None
        self.prefixes = PrefixStore(prefix_tokens)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def batch_rows(self) -> int:
        """How many continuations this model is decoding together now (0 in naive mode)."""
        return 0 if self._scheduler is None else self._scheduler.rows

    def load(self, log: Callable[[str], None] = print) -> None:
        """Load the model into memory (converting it first if the cache lacks it) and warm it
        up with a short continuation. Idempotent."""
        with self._lock:
            if self._model is not None:
                return
            folder = ensure_converted(self.card, self.cache_dir, log=log)
            started = time.perf_counter()
            force_offline()
            import torch
            from transformers import AutoModelForCausalLM

            from cyoa.generation.embeddings import use_blocks
            from cyoa.generation.packing import pack_model
            from cyoa.generation.scheduler import BatchScheduler
            from cyoa.generation.vocabulary import SCREEN_FROM_ENTRIES, Vocabulary

            tokenizer = load_tokenizer(folder)
            model = AutoModelForCausalLM.from_pretrained(
                folder, local_files_only=True, dtype=getattr(torch, self.dtype)
            )
            model.eval()
            if self.quantize == "int8":
                model = _quantize_int8(model)
            elif self.dtype == "float32":
                # A large tied matrix (Gemma's) is read from its exact 8-bit blocks, a quarter
                # of the memory; only where the vocabulary screen spares the whole product.
                if not use_blocks(model, folder, min_entries=SCREEN_FROM_ENTRIES):
                    # A smaller one (SmolLM2's) is multiplied whole at every step: packed for
                    # oneDNN, with the embeddings from the blocks.
                    use_blocks(model, folder, packed_output=True)
                pack_model(model)
            self._stop_ids, banned = _special_tokens(model, tokenizer)
            self._vocabulary = Vocabulary(model, banned)
            self._tokenizer = tokenizer
            if self.mode == BATCHED:
                self._scheduler = BatchScheduler(
                    model,
                    tokenizer,
                    self._stop_ids,
                    self._vocabulary,
                    name=self.card.name,
                    cores=self.cores,
                    prefixes=self.prefixes,
                )
                self._scheduler.start()
            self._model = model
            loaded = time.perf_counter()
            for _ in self._stream(_WARM_UP_PROMPT, Sampling(max_new_tokens=_WARM_UP_TOKENS), 0):
                pass
            log(
                f"Loaded {self.card.name} in {loaded - started:.1f} s "
                f"(warm-up {time.perf_counter() - loaded:.1f} s, {self.mode} mode)"
            )

    def stream(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        """Yield the continuation of ``prompt``, exactly one piece per generated token (a
        piece is empty while a token only starts a multi-byte character), until an
        end-of-text token or ``sampling.max_new_tokens`` tokens. The same ``prompt``,
        ``sampling`` and ``seed`` give the same pieces. Closing the iterator early stops
        the generation (in batched mode the row leaves the batch)."""
        self.load()
        return self._stream(prompt, sampling, seed)

    def _stream(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        if self._scheduler is not None:
            return self._scheduler.stream(prompt, sampling, seed)
        return self._stream_alone(prompt, sampling, seed)

    def _stream_alone(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        """Naive mode: the whole continuation while holding the process-wide lock."""
        import torch

        from cyoa.generation.sampling import sample_rows_from_hidden
        from cyoa.generation.scheduler import INCOMPLETE

        generator = torch.Generator().manual_seed(seed)
        decoder = self._model.get_decoder()
        with _ALONE, torch.inference_mode():
            ids = self._tokenizer(prompt).input_ids
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
                        hidden, [sampling], [generator], self._vocabulary
                    )[0]
                    if token_id in self._stop_ids:
                        return
                    generated.append(token_id)
                    text = self._tokenizer.decode(
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
                # row's (cyoa.generation.prefixes).
                if len(fed) > len(ids):
                    self.prefixes.put(fed, past, None, len(ids))


def _quantize_int8(model: Any) -> Any:
    """``model`` with every linear layer replaced by an 8-bit dynamically quantized one
    (weights per output channel, activations per batch)."""
    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():
        # torch.ao's dynamic quantization is deprecated in favour of torchao, which is not a
        # dependency; the pinned torch still ships it and it works. The warnings are noise.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        return quantize_dynamic(
            model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
        )


def _special_tokens(model: Any, tokenizer: Any) -> tuple[frozenset[int], Any]:
    """The token ids that end a continuation, and the ids it may never contain.

    A continuation ends at any end-of-text id the model declares and at the tokenizer's
    named special tokens (end of document, padding, a chat turn). The other added tokens
    are never sampled: they are markup that has no place in a story sentence (Gemma has over
    6,000, such as ``<start_of_image>``, ``<h1>`` and ``<unused0>``), except its tokens made
    only of newlines, which are ordinary text.
    """
    import torch

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
