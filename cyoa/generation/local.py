"""The local backend: a model run in this process: a GGUF card's by llama.cpp
(:mod:`cyoa.generation.llamacpp`) on the CPU; a checkpoint folder's by the torch engine
(:mod:`cyoa.generation.engine`) on the CPU, or by transformers' ``generate``
(:mod:`cyoa.generation.engine.generate`) on a GPU, where a GGUF card asking for a GPU or for a
torch number format goes too.

This module holds what the app knows of a local model: its card's options (device, number
format), where its weights live, the chat template of an instruct model, loading in the
background and the warm-up. How continuations are computed (batching, caches, kernels) is
the engine's.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cyoa.generation.checkpoints import (
    card_error,
    check_memory,
    checkpoint_elements,
    error_summary,
)
from cyoa.generation.engine import (
    BATCHED,
    DEFAULT_PROMPT_STORE_TOKENS,
    DTYPES,
    GENERATION_MODES,
    NAIVE,
    QUANTIZE_OPTIONS,
    CoreShare,
    PrefixStore,
    load_generate_model,
    load_local_model,
)
from cyoa.generation.llamacpp import (
    CONTEXT_STEP,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_ROWS,
    load_llama_model,
)
from cyoa.generation.types import ModelCard, Sampling
from cyoa.generation.weights import ensure_converted, force_offline, load_tokenizer, locate_gguf

if TYPE_CHECKING:
    from cyoa.generation.engine import GenerateModel, LocalModel
    from cyoa.generation.llamacpp.model import LlamaModel

# The card's [options] for this backend, with their defaults.
OPTIONS: dict[str, str | int] = {
    # Which engine runs the model: "llama.cpp" (a GGUF card's default, on the CPU) or
    # "torch" (a checkpoint folder's only engine; a GGUF card then runs converted to float32).
    "engine": "",
    # llama.cpp: how many suggestions the model decodes at once, and how many tokens each may
    # hold (prompt and continuation; a multiple of 256). Their memory is reserved at load.
    "rows": DEFAULT_ROWS,
    "context_tokens": DEFAULT_CONTEXT_TOKENS,
    # Where the model runs: "auto" (the first CUDA GPU if there is one, else the CPU), "cpu",
    # "cuda", "cuda:N" or "mps" (Apple's GPU).
    "device": "auto",
    # The weights' number format: "float32", "bfloat16", or on a GPU "float16".
    "dtype": "float32",
    # "int8": every linear layer quantized to 8-bit integers at load (CPU engine only).
    "quantize": "",
}
LLAMA_CPP, TORCH = "llama.cpp", "torch"
ENGINES = (LLAMA_CPP, TORCH)
# The options only the torch engine takes, and those only llama.cpp takes.
_TORCH_ONLY = ("dtype", "quantize")
_LLAMA_ONLY = ("rows", "context_tokens")
DEVICE_PATTERN = re.compile(r"auto|cpu|mps|cuda(:\d+)?")
GPU_DTYPES = ("float32", "bfloat16", "float16")
BYTES_PER_NUMBER = {"float32": 4, "bfloat16": 2, "float16": 2}
# What an instruct model is told when the card gives no system_prompt.
DEFAULT_SYSTEM_PROMPT = (
    "Continue the user's story with its next sentence. Write only that one sentence."
)
# Warm-up at load: two tokens of a short continuation, so that the first writer does not pay
# for the one-time set-up of the kernels.
_WARM_UP_PROMPT = "The lighthouse keeper found a letter on the rocks."
_WARM_UP_TOKENS = 2
# The torch threads per operation configure_torch_threads was given (None: torch's own).
_torch_threads: int | None = None


class ModelUnloaded(RuntimeError):
    """The model was unloaded while a caller still held its backend."""


def configure_torch_threads(threads: int) -> None:
    """Set how many CPU threads one torch operation may use (process-wide): now if torch is
    loaded, else when the torch engine first loads a model (:func:`apply_torch_threads`),
    so that a process running only llama.cpp models never imports torch (some 200 MB).

    Each model generates on its own Python thread, so with two models working at once the
    process uses about ``2 × threads`` cores; on a 2-core machine ``threads=1`` avoids the
    two models fighting over the same cores.
    """
    global _torch_threads
    if threads < 1:
        raise ValueError("threads must be at least 1.")
    _torch_threads = threads
    if "torch" in sys.modules:
        apply_torch_threads()


def apply_torch_threads() -> None:
    """Give torch the thread count :func:`configure_torch_threads` set, if one was set."""
    if _torch_threads is not None:
        import torch

        torch.set_num_threads(_torch_threads)


def options_problem(options: dict[str, Any]) -> tuple[str, str] | None:
    """The first thing wrong with a transformers card's ``[options]``, as ``(field,
    problem)`` (e.g. ``("options.device", "must be …")``), or None when they are usable."""
    for key, value in options.items():
        if key not in OPTIONS:
            return f"options.{key}", f"is not an option of this backend ({', '.join(OPTIONS)})."
        if key in _LLAMA_ONLY:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                return f"options.{key}", f"must be a whole number ≥ 1 (found {value!r})."
        elif not isinstance(value, str):
            return f"options.{key}", f"must be a string (found {value!r})."
    engine = options.get("engine", "")
    if engine and engine not in ENGINES:
        return "options.engine", f'must be "llama.cpp" or "torch" (found {engine!r}).'
    context = options.get("context_tokens", DEFAULT_CONTEXT_TOKENS)
    if context % CONTEXT_STEP:
        return (
            "options.context_tokens",
            f"must be a multiple of {CONTEXT_STEP} (found {context}; e.g. "
            f"{-(-context // CONTEXT_STEP) * CONTEXT_STEP}).",
        )
    if engine == LLAMA_CPP:
        for key in _TORCH_ONLY:
            if key in options:
                return (
                    f"options.{key}",
                    'is for the torch engine: set engine = "torch" or leave it out.',
                )
        if options.get("device", "auto") not in ("auto", "cpu"):
            return "options.device", 'must be "auto" or "cpu" with engine = "llama.cpp" (CPU only).'
    device = options.get("device", OPTIONS["device"])
    dtype = options.get("dtype", OPTIONS["dtype"])
    quantize = options.get("quantize", OPTIONS["quantize"])
    if not DEVICE_PATTERN.fullmatch(device):
        return (
            "options.device",
            f'must be "auto", "cpu", "cuda", "cuda:N" (N a GPU\'s number) or "mps" '
            f"(found {device!r}).",
        )
    if dtype not in GPU_DTYPES:
        return "options.dtype", f"must be one of {', '.join(GPU_DTYPES)} (found {dtype!r})."
    if device == "cpu" and dtype not in DTYPES:
        return "options.dtype", f"must be one of {', '.join(DTYPES)} on the CPU (found {dtype!r})."
    if quantize not in QUANTIZE_OPTIONS:
        return "options.quantize", f'must be "int8" or left out (found {quantize!r}).'
    if quantize and device not in ("auto", "cpu"):
        return "options.quantize", f'"int8" is for the CPU engine only, not {device!r}.'
    return None


def engine_for(card: ModelCard, device: str) -> str:
    """The engine that runs the card's model on ``device``: the card's ``engine`` option
    when given; else llama.cpp for a GGUF file (packaged or ``gguf``) on the CPU without a
    torch-only option (``dtype``, ``quantize``), and the torch engine for the
    rest (a checkpoint folder, a GPU). Raises
    :class:`~cyoa.generation.checkpoints.ModelLoadError` naming ``options.engine`` for
    llama.cpp asked of a checkpoint folder, and naming the llama.cpp-only options given to
    the torch engine."""
    engine = card.options.get("engine", "")
    if not engine:
        gguf = not card.path and device == "cpu"
        engine = LLAMA_CPP if gguf and not set(_TORCH_ONLY) & set(card.options) else TORCH
    if engine == LLAMA_CPP and card.path:
        raise card_error(
            card,
            "options.engine",
            '"llama.cpp" needs a GGUF file (package or gguf), not a checkpoint folder (path): '
            "leave engine out.",
        )
    if engine == TORCH:
        for key in _LLAMA_ONLY:
            if key in card.options:
                raise card_error(
                    card,
                    f"options.{key}",
                    "is for the llama.cpp engine (a GGUF card on the CPU): leave it out.",
                )
    return engine


def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU here. A CPU-only torch build (its version ends in
    ``+cpu``, as requirements.txt installs it) sees none, which is known without importing
    torch: the llama.cpp engine never imports it, and its libraries would hold some 200 MB of
    the process's memory (bench/results/peer.md)."""
    try:
        if importlib.metadata.version("torch").endswith("+cpu"):
            return False
    except importlib.metadata.PackageNotFoundError:
        return False
    import torch

    return torch.cuda.is_available()


def resolve_device(card: ModelCard) -> str:
    """The device the card's model runs on: ``cpu``, ``cuda:N`` or ``mps`` (``auto`` is
    ``cuda:0`` when torch sees a CUDA GPU, else ``cpu``). Raises
    :class:`~cyoa.generation.checkpoints.ModelLoadError` naming ``options.device`` when
    that device is not on this machine, and naming ``options.dtype`` or ``options.quantize``
    when the device cannot run them."""
    wanted = card.options.get("device", OPTIONS["device"])
    if wanted == "auto":
        device = "cuda:0" if cuda_available() else "cpu"
    elif wanted.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            build = " (this torch is a CPU-only build)" if torch.version.cuda is None else ""
            raise card_error(
                card,
                "options.device",
                f"is {wanted!r}, but torch {torch.__version__} sees no CUDA GPU here{build}: "
                "run it on a machine with an NVIDIA GPU and a CUDA build of torch, or set "
                'device = "cpu" or "auto".',
            )
        index = int(wanted.partition(":")[2] or 0)
        count = torch.cuda.device_count()
        if index >= count:
            raise card_error(
                card,
                "options.device",
                f"is {wanted!r}, but this machine has {count} CUDA GPU(s), cuda:0 to "
                f"cuda:{count - 1}: name one of them.",
            )
        device = f"cuda:{index}"
    elif wanted == "mps":
        import torch

        if not torch.backends.mps.is_available():
            raise card_error(
                card,
                "options.device",
                'is "mps", but torch sees no Apple GPU here: set device = "cpu" or "auto".',
            )
        device = "mps"
    else:
        device = "cpu"
    dtype = card.options.get("dtype", OPTIONS["dtype"])
    if device == "cpu" and dtype not in DTYPES:
        raise card_error(
            card,
            "options.dtype",
            f"is {dtype!r}, which runs on a GPU only, and the model runs on the CPU here: "
            f"use one of {', '.join(DTYPES)}.",
        )
    if device != "cpu" and card.options.get("quantize"):
        raise card_error(
            card,
            "options.quantize",
            f'is "int8", which the CPU engine only runs, but the model runs on {device}: '
            'leave quantize out or set device = "cpu".',
        )
    return device


def chat_prompt(tokenizer: Any, system_prompt: str, prompt: str) -> str:
    """The text an instruct model continues: ``prompt`` as the user's message after
    ``system_prompt``, in the tokenizer's chat template, ending where the assistant's answer
    begins. A beginning-of-text token the template writes is left out when the tokenizer
    adds its own, so that it is not read twice."""
    messages = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": prompt},
    ]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    bos = tokenizer.bos_token
    if bos and text.startswith(bos) and tokenizer("").input_ids[:1] == [tokenizer.bos_token_id]:
        text = text[len(bos) :]
    return text


class TransformersBackend:
    """A local model: its weights found (a ``path`` checkpoint as it is; a packaged or local
    GGUF file converted into the model cache on first use), loaded on the card's device and
    warmed up.

    On the CPU the engine runs it in ``mode`` (``batched``, the default, or ``naive``: see
    :class:`cyoa.generation.engine.model.LocalModel`), with ``cores`` shared between the
    batched models; a prompt that begins with a text read before reads only the rest (at
    most ``prefix_tokens`` tokens of texts kept). On a GPU transformers' ``generate`` runs it
    (:class:`cyoa.generation.engine.generate.GenerateModel`); ``mode``, ``cores`` and the prompt
    store apply to the CPU only.

    Card options (:data:`OPTIONS`): ``device``; ``dtype = "bfloat16"`` loads the weights in
    bfloat16 (default ``"float32"``; faster in batches, but a row's rounding, and so its
    text, then depends on its batch), ``"float16"`` on a GPU only; ``quantize = "int8"``
    quantizes every linear layer to 8-bit integers at load (CPU only). Their speed and their
    effect on the text are on bench/results/model-options.md. With the card's ``chat``, each
    prompt is wrapped in the tokenizer's chat template (:func:`chat_prompt`).
    """

    def __init__(
        self,
        card: ModelCard,
        cache_dir: Path,
        mode: str = BATCHED,
        cores: CoreShare | None = None,
        prefix_tokens: int = DEFAULT_PROMPT_STORE_TOKENS,
    ) -> None:
        if mode not in GENERATION_MODES:
            raise ValueError(
                f"Generation mode {mode!r} is unknown; use one of: {', '.join(GENERATION_MODES)}."
            )
        problem = options_problem(card.options)
        if problem is not None:
            raise ValueError(f"Model card {card.name!r}: {problem[0]} {problem[1]}")
        self.engine = ""
        self.quantize = card.options.get("quantize", OPTIONS["quantize"])
        self.dtype = card.options.get("dtype", OPTIONS["dtype"])
        self.card = card
        self.cache_dir = Path(cache_dir)
        self.mode = mode
        self.cores = cores
        self._lock = threading.Lock()
        self.local_model: LocalModel | GenerateModel | LlamaModel | None = None
        self.closed = False
        self.tokenizer: Any = None
        # Where the model runs once loaded: "cpu", "cuda:N" or "mps".
        self.device = ""
        self.prefixes = PrefixStore(prefix_tokens)

    @property
    def loaded(self) -> bool:
        return self.local_model is not None

    def batch_rows(self) -> int:
        """How many continuations this model is decoding together now (0 in naive mode)."""
        return 0 if self.local_model is None else self.local_model.rows

    def load(self, log: Callable[[str], None] = print) -> LocalModel | GenerateModel | LlamaModel:
        """Load the model into memory (for the torch engine, converting a GGUF file first if
        the cache lacks it) and warm it up with a short continuation; returns the loaded
        model. Idempotent.

        Raises :class:`~cyoa.generation.checkpoints.ModelLoadError` naming the card file and
        the field when the weights are missing or unreadable, the device is not here, or the
        weights need more memory than is free."""
        with self._lock:
            if self.local_model is not None:
                return self.local_model
            if self.closed:
                raise ModelUnloaded(
                    f"Model {self.card.name!r} was unloaded; load it again to generate with it."
                )
            device = resolve_device(self.card)
            engine = engine_for(self.card, device)
            started = time.perf_counter()
            if engine == LLAMA_CPP:
                local_model: LocalModel | GenerateModel | LlamaModel = self._load_llama()
                self.tokenizer = local_model.tokenizer
                if self.card.chat:
                    _check_chat_template(self.card, self.tokenizer)
            else:
                local_model = self._load_torch(device, log)
            loaded = time.perf_counter()
            try:
                warm_up = local_model.stream(
                    self._prompt(_WARM_UP_PROMPT), Sampling(max_new_tokens=_WARM_UP_TOKENS), 0
                )
                for _ in warm_up:
                    pass
            except BaseException:
                local_model.close()  # its thread would keep the weights alive
                raise
            self.device = device
            self.engine = engine
            self.local_model = local_model
            if engine == LLAMA_CPP:
                where = "llama.cpp"
            elif device == "cpu":
                where = f"torch engine, {self.mode} mode"
            else:
                where = f"{device}, transformers generate"
            log(
                f"Loaded {self.card.name} in {loaded - started:.1f} s "
                f"(warm-up {time.perf_counter() - loaded:.1f} s, {where})"
            )
            return local_model

    def _load_llama(self) -> LlamaModel:
        """The card's GGUF file (a packaged one assembled once into the model cache) loaded
        by llama.cpp, with the card's ``rows`` and ``context_tokens``; one row at a time in
        naive mode."""
        gguf = locate_gguf(self.card, self._gguf_folder())
        check_memory(self.card, gguf.stat().st_size, "cpu", "to load it")
        try:
            return load_llama_model(
                gguf,
                name=self.card.name,
                rows=1 if self.mode == NAIVE else self.card.options.get("rows", DEFAULT_ROWS),
                context_tokens=self.card.options.get("context_tokens", DEFAULT_CONTEXT_TOKENS),
                cores=self.cores,
                parse_special=self.card.chat,
                card_file=self.card.card_file,
            )
        except ValueError as exc:
            field = "gguf" if self.card.gguf else "weights_file"
            raise card_error(self.card, field, str(exc)) from exc

    def _gguf_folder(self) -> Path:
        """Where a packaged GGUF file shipped in parts is assembled (by its package, once)."""
        return self.cache_dir / "gguf"

    def _load_torch(self, device: str, log: Callable[[str], None]) -> LocalModel | GenerateModel:
        """The model converted (a GGUF file, once) and loaded by the torch engine on the CPU
        or transformers' ``generate`` on a GPU."""
        apply_torch_threads()
        folder = ensure_converted(self.card, self.cache_dir, log=log)
        check_memory(
            self.card,
            checkpoint_elements(folder) * BYTES_PER_NUMBER[self.dtype],
            device,
            f"to load it in {self.dtype}",
        )
        force_offline()
        self.tokenizer = self._load_tokenizer(folder)
        if device != "cpu":
            return load_generate_model(
                folder, self.tokenizer, name=self.card.name, device=device, dtype=self.dtype
            )
        return load_local_model(
            folder,
            self.tokenizer,
            name=self.card.name,
            dtype=self.dtype,
            quantize=self.quantize,
            mode=self.mode,
            cores=self.cores,
            prefixes=self.prefixes,
        )

    def stream(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        """Yield the continuation of ``prompt`` (in the chat template if the card says
        ``chat``), exactly one piece per generated token (a piece is empty while a token
        only starts a multi-byte character), until an end-of-text token or
        ``sampling.max_new_tokens`` tokens. The same ``prompt``, ``sampling`` and ``seed``
        give the same pieces on the same machine (on a GPU, see
        :mod:`cyoa.generation.engine.generate` for what the seed guarantees). Closing the
        iterator early stops the generation (in a batch the row leaves it)."""
        local_model = self.load()
        return local_model.stream(self._prompt(prompt), sampling, seed)

    def close(self) -> None:
        """Let go of the loaded model (when the pool unloads it): its generating thread ends
        after its current step, the generations in progress fail with an error, and this
        backend never loads again (:class:`ModelUnloaded`), so that nothing holds the
        weights; the pool makes a new backend for the next load."""
        with self._lock:
            local_model, self.local_model = self.local_model, None
            self.closed = True
        if local_model is not None:
            local_model.close()

    def _prompt(self, prompt: str) -> str:
        if not self.card.chat:
            return prompt
        return chat_prompt(self.tokenizer, self.card.system_prompt, prompt)

    def _load_tokenizer(self, folder: Path) -> Any:
        """The model's tokenizer: a converted model's with :func:`load_tokenizer`, a ``path``
        checkpoint's with transformers' ``AutoTokenizer`` (offline); with ``chat``, checked
        to have a chat template that takes a system and a user message."""
        if self.card.path:
            from transformers import AutoTokenizer

            try:
                tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise card_error(
                    self.card,
                    "path",
                    f"names {folder}, whose tokenizer cannot be loaded ({error_summary(exc)}): "
                    "save the model's tokenizer into it with tokenizer.save_pretrained.",
                ) from exc
        else:
            tokenizer = load_tokenizer(folder)
        if self.card.chat:
            _check_chat_template(self.card, tokenizer)
        return tokenizer


def _check_chat_template(card: ModelCard, tokenizer: Any) -> None:
    if not tokenizer.chat_template:
        raise card_error(
            card,
            "chat",
            "is true, but the model's tokenizer has no chat template "
            "(chat_template.jinja or chat_template in tokenizer_config.json): set chat = "
            "false to have the model continue the story as plain text.",
        )
    try:
        chat_prompt(tokenizer, card.system_prompt, _WARM_UP_PROMPT)
    except Exception as exc:  # noqa: BLE001 - a template is a program: any failure is reported
        raise card_error(
            card,
            "chat",
            f"is true, but the tokenizer's chat template cannot write a system message and a "
            f"user message ({error_summary(exc)}): set chat = false.",
        ) from exc
