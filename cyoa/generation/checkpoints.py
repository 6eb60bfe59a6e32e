"""A researcher's own weights, named by a model card: a local Hugging Face checkpoint folder
(``path``) or a local GGUF file (``gguf``). Checked before loading (files, architecture,
memory free for them), and given a content version.

Every error names the card file and the field and says what to fix (:class:`ModelLoadError`).
Nothing here loads a model: :mod:`cyoa.generation.weights` converts GGUF files and
:mod:`cyoa.generation.local` loads and runs the models.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import psutil

from cyoa.generation.types import ModelCard

# transformers' names for a checkpoint's weights (one file, or shards with an index);
# safetensors are preferred when both are present, as transformers does.
WEIGHT_PATTERNS = ("model*.safetensors", "pytorch_model*.bin")
# A tokenizer saved with a checkpoint has at least one of these.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "spiece.model", "vocab.json", "vocab.txt")
# Hex digits of a SHA-256 kept in a content version: 64 bits, enough to tell weights apart.
VERSION_DIGITS = 16
# The tokenizer files a checkpoint's content version covers, besides its weights.
VERSIONED_TOKENIZER_FILES = (
    *TOKENIZER_FILES, "tokenizer_config.json", "special_tokens_map.json", "merges.txt",
    "chat_template.jinja", "chat_template.json",
)  # fmt: skip
_CHUNK_BYTES = 1 << 20
# SHA-256 of files already read by this process, by (path, size, modification time).
_hashes: dict[tuple[str, int, int], str] = {}


class ModelLoadError(RuntimeError):
    """A model card's model cannot be loaded on this machine; the message names the card
    file and the field, and says what to fix."""


def card_error(card: ModelCard, field: str, problem: str) -> ModelLoadError:
    """The error for ``card``'s ``field``: ``"<card file>: field '<field>' <problem>"``, the
    form :class:`cyoa.generation.cards.ModelCardError` messages take."""
    where = card.card_file or f"model card {card.name!r}"
    return ModelLoadError(f"{where}: field {field!r} {problem}")


def source_field(card: ModelCard) -> str:
    """The field that names the card's weights: ``path``, ``gguf`` or ``package``."""
    if card.path:
        return "path"
    if card.gguf:
        return "gguf"
    return "package"


def weight_files(folder: Path) -> list[Path]:
    """The weight files transformers would load from the checkpoint ``folder``:
    ``model*.safetensors`` if any, else ``pytorch_model*.bin`` (in name order)."""
    for pattern in WEIGHT_PATTERNS:
        files = sorted(Path(folder).glob(pattern))
        if files:
            return files
    return []


def checkpoint_version(folder: Path) -> str:
    """The content version of a checkpoint folder: ``"checkpoint:"`` and the first 16 hex
    digits of a SHA-256 over its ``config.json``, each weight file's name and SHA-256, and
    the tokenizer files present (:data:`VERSIONED_TOKENIZER_FILES`: they change the text a
    model reads, and ``chat = true`` reads the chat template). Any change to the weights
    gives a new version. Each file is read once per process (:func:`file_sha256`). Empty
    when the folder has no ``config.json`` or no weights."""
    folder = Path(folder)
    config = folder / "config.json"
    files = weight_files(folder)
    if not config.is_file() or not files:
        return ""
    digest = hashlib.sha256(config.read_bytes())
    tokenizer = [folder / name for name in VERSIONED_TOKENIZER_FILES if (folder / name).is_file()]
    for path in [*files, *tokenizer]:
        digest.update(f"\n{path.name}\t{file_sha256(path)}\n".encode())
    return f"checkpoint:{digest.hexdigest()[:VERSION_DIGITS]}"


def file_sha256(path: Path) -> str:
    """The SHA-256 of the file at ``path`` (64 hex digits). Read once per process while the
    file's size and modification time stay the same (about a second per gigabyte)."""
    path = Path(path).resolve()
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _hashes:
        digest = hashlib.sha256()
        with path.open("rb") as file:
            while chunk := file.read(_CHUNK_BYTES):
                digest.update(chunk)
        _hashes[key] = digest.hexdigest()
    return _hashes[key]


def gguf_version(path: Path) -> str:
    """The content version of a GGUF file: ``"sha256:"`` and the first 16 hex digits of its
    SHA-256 (what ``sha256sum`` prints first). Empty when there is no such file."""
    path = Path(path)
    return f"sha256:{file_sha256(path)[:VERSION_DIGITS]}" if path.is_file() else ""


def content_version(card: ModelCard) -> str:
    """The version computed from the weights a ``path`` or ``gguf`` card names now (empty
    for a packaged card, or when the weights are missing)."""
    if card.path:
        return checkpoint_version(Path(card.path))
    if card.gguf:
        return gguf_version(Path(card.gguf))
    return ""


def check_version(card: ModelCard) -> None:
    """Make sure the version a suggestion will record is the version of the weights there
    now: a card whose version was computed when it was read must still match its weights."""
    if not card.version_from_content:
        return
    now = content_version(card)
    if now != card.version:
        field = source_field(card)
        was = card.version or "none: the weights were missing"
        raise card_error(
            card,
            field,
            f"names weights that changed after the card was read (version then: {was}; now: "
            f"{now}). Read the model cards again (restart the app) so that every suggestion "
            "records the weights it comes from.",
        )


def checked_gguf(card: ModelCard) -> Path:
    """The GGUF file a ``gguf`` card names, which must exist."""
    path = Path(card.gguf)
    if path.is_dir():
        raise card_error(
            card,
            "gguf",
            f"names {path}, which is a folder: gguf names one .gguf file (a checkpoint folder "
            "is given with path = …).",
        )
    if not path.is_file():
        raise card_error(
            card,
            "gguf",
            f"names {path}, which does not exist: give the GGUF file's path (a relative path "
            "is read from the card's folder).",
        )
    return path


def checked_checkpoint(card: ModelCard) -> Path:
    """The checkpoint folder a ``path`` card names, once it is known to hold what loading
    needs: ``config.json`` of an architecture transformers can run as a causal language
    model, weights and tokenizer files."""
    folder = Path(card.path)
    if folder.is_file():
        raise card_error(
            card,
            "path",
            f"names {folder}, which is a file: path names a checkpoint folder (a GGUF file is "
            "given with gguf = …).",
        )
    if not folder.is_dir():
        raise card_error(
            card,
            "path",
            f"names the folder {folder}, which does not exist: give the checkpoint folder (a "
            "relative path is read from the card's folder).",
        )
    if not (folder / "config.json").is_file():
        raise card_error(
            card,
            "path",
            f"names {folder}, which has no config.json: give the folder the model was saved "
            "into with save_pretrained.",
        )
    if not weight_files(folder):
        raise card_error(
            card,
            "path",
            f"names {folder}, which has no weights (model.safetensors, "
            "model-*-of-*.safetensors or pytorch_model*.bin): save the model there with "
            "save_pretrained.",
        )
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise card_error(
            card,
            "path",
            f"names {folder}, which has no tokenizer (none of {', '.join(TOKENIZER_FILES)}): "
            "save the model's tokenizer into it with tokenizer.save_pretrained.",
        )
    _check_architecture(card, folder)
    return folder


def _check_architecture(card: ModelCard, folder: Path) -> None:
    """Raise :class:`ModelLoadError` unless transformers can load ``folder``'s model for text
    generation (``AutoModelForCausalLM``)."""
    import transformers
    from transformers import MODEL_FOR_CAUSAL_LM_MAPPING, AutoConfig

    try:
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
    except (ValueError, KeyError, OSError) as exc:
        model_type = _model_type(folder)
        raise card_error(
            card,
            "path",
            f"names a checkpoint whose architecture (model_type {model_type!r} in "
            f"config.json) transformers {transformers.__version__} cannot load: use a model "
            f"transformers supports, or convert it to one ({error_summary(exc)}).",
        ) from exc
    if type(config) not in MODEL_FOR_CAUSAL_LM_MAPPING:
        raise card_error(
            card,
            "path",
            f"names a {config.model_type!r} checkpoint, which transformers "
            f"{transformers.__version__} cannot run as a text generator "
            "(AutoModelForCausalLM): use a causal language model.",
        )


def _model_type(folder: Path) -> str:
    try:
        return str(json.loads((folder / "config.json").read_text()).get("model_type", ""))
    except (OSError, ValueError, AttributeError):
        return ""


def error_summary(exc: BaseException) -> str:
    """The first line of ``exc``'s message (transformers' run to several paragraphs), or its
    type's name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def checkpoint_elements(folder: Path) -> int:
    """How many numbers the checkpoint's weights hold: exact for safetensors (read from the
    files' headers), estimated for ``.bin`` files from their size and the bytes a number
    takes in the dtype ``config.json`` names (``torch_dtype`` or ``dtype``: two for float16
    and bfloat16, else four)."""
    total = 0
    for path in weight_files(folder):
        if path.suffix == ".safetensors":
            total += _safetensors_elements(path)
        else:
            total += path.stat().st_size // _bytes_per_number(Path(folder))
    return total


def _bytes_per_number(folder: Path) -> int:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 4
    dtype = str(config.get("torch_dtype") or config.get("dtype") or "float32")
    return 2 if dtype in ("float16", "bfloat16") else 4


def _safetensors_elements(path: Path) -> int:
    """The numbers in one safetensors file, from its header (an 8-byte little-endian length,
    then that many bytes of JSON: each tensor's dtype, shape and offsets)."""
    with path.open("rb") as file:
        length = int.from_bytes(file.read(8), "little")
        header = json.loads(file.read(length))
    return sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")


def gguf_elements(path: Path) -> int:
    """How many numbers the tensors of a GGUF file hold (read from its header)."""
    import gguf  # its reader as it is now: one_reader_per_file may stand in for it

    return sum(int(tensor.n_elements) for tensor in gguf.GGUFReader(os.fspath(path)).tensors)


def free_memory_bytes(device: str) -> int:
    """Bytes of memory free for a model on ``device`` (``cpu``, ``cuda:N``, ``mps``): the
    GPU's free memory for CUDA (``torch.cuda.mem_get_info``), otherwise the memory the
    operating system can give without swapping (``psutil.virtual_memory().available``;
    an Apple GPU shares it)."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    return int(psutil.virtual_memory().available)


def check_memory(card: ModelCard, needed_bytes: int, device: str, purpose: str) -> None:
    """Raise :class:`ModelLoadError` naming the card's weights field when ``needed_bytes``
    (an estimate from the weights' sizes) exceed the memory free on ``device``; ``purpose``
    says what the memory is for (e.g. ``"to load it in float32"``)."""
    free = free_memory_bytes(device)
    if needed_bytes > free:
        raise card_error(
            card,
            source_field(card),
            f"names weights that need about {_readable(needed_bytes)} {purpose} on {device}, "
            f"but only {_readable(free)} is free there: free some memory, load it in a "
            "smaller dtype (options.dtype) or use a machine with more memory.",
        )


def _readable(size: int) -> str:
    """A size in bytes as decimal gigabytes, or megabytes below one gigabyte."""
    return f"{size / 1e9:.2f} GB" if size >= 1e9 else f"{size / 1e6:.1f} MB"
