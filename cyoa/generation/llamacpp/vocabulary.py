"""A GGUF model's vocabulary, read by llama.cpp: text to token ids and back, the tokens that
end a continuation or may never appear in one, and the model's chat template.

:class:`Vocabulary` has the small part of a Hugging Face tokenizer's interface that the rest
of CYOA uses (``tokenizer(text).input_ids``, ``decode``, ``apply_chat_template``,
``bos_token``, ``chat_template``), so the engine's rows and the app's chat prompts work
with either engine.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

# llama_token_attr bits (llama.h).
_UNKNOWN, _UNUSED, _CONTROL, _USER_DEFINED = 1 << 0, 1 << 1, 1 << 3, 1 << 4


@dataclass(frozen=True)
class Encoding:
    """What ``tokenizer(text)`` returns: the token ids."""

    input_ids: list[int]


class Vocabulary:
    """The vocabulary of the llama.cpp model ``model`` (a ``llama_model`` pointer) through
    the ``llama_cpp`` module ``lib``. ``parse_special``: whether special-token text in a
    prompt (``<|im_start|>``) becomes that token, as a chat template needs; for plain story
    text it stays text, so a writer cannot type a control token."""

    def __init__(self, lib: Any, model: Any, parse_special: bool = False) -> None:
        self._lib = lib
        self._vocab = lib.llama_model_get_vocab(model)
        self.size = lib.llama_vocab_n_tokens(self._vocab)
        self.parse_special = parse_special
        self.bos_token_id = lib.llama_vocab_bos(self._vocab)
        self.bos_token = self._text(self.bos_token_id)
        eos = lib.llama_vocab_eos(self._vocab)
        self.eos_token = self._text(eos)
        template = lib.llama_model_chat_template(model, None)
        self.chat_template = template.decode("utf-8") if template else None
        self._pieces: dict[int, bytes] = {}
        self.stop_ids, self.banned_ids = self._special_tokens()

    def __call__(self, text: str) -> Encoding:
        """``text``'s token ids, with the beginning-of-text token where the model wants it."""
        data = text.encode("utf-8")
        size = len(data) + 8
        while True:
            ids = (self._lib.llama_token * size)()
            count = self._lib.llama_tokenize(
                self._vocab, data, len(data), ids, size, True, self.parse_special
            )
            if count >= 0:
                return Encoding(list(ids[:count]))
            size = -count

    def decode(
        self,
        ids: list[int],
        skip_special_tokens: bool = True,
        clean_up_tokenization_spaces: bool = False,
    ) -> str:
        """The text of ``ids``: each token's bytes joined, special tokens left out; a text
        ending inside a multi-byte character ends with U+FFFD (the rows hold it back)."""
        del skip_special_tokens, clean_up_tokenization_spaces  # always so, as CYOA asks
        return b"".join(self._piece(token) for token in ids).decode("utf-8", errors="replace")

    def apply_chat_template(
        self,
        messages: list[dict[str, str]],
        tokenize: bool = False,
        add_generation_prompt: bool = True,
    ) -> str:
        """``messages`` in the model's chat template, rendered as Hugging Face's
        ``apply_chat_template`` renders it (a sandboxed Jinja environment with the same
        options and names). Raises ``ValueError`` when the model has no template or it
        fails."""
        if tokenize:
            raise ValueError("Only text is returned; tokenize it with the vocabulary.")
        if not self.chat_template:
            raise ValueError("The model has no chat template.")

        def raise_exception(message: str) -> None:
            raise TemplateError(message)

        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
        )
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        try:
            return env.from_string(self.chat_template).render(
                messages=messages,
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
            )
        except TemplateError as exc:
            raise ValueError(str(exc)) from exc

    def _piece(self, token: int) -> bytes:
        piece = self._pieces.get(token)
        if piece is None:
            buffer = ctypes.create_string_buffer(64)
            length = self._lib.llama_token_to_piece(self._vocab, token, buffer, 64, 0, False)
            if length < 0:
                buffer = ctypes.create_string_buffer(-length)
                length = self._lib.llama_token_to_piece(
                    self._vocab, token, buffer, -length, 0, False
                )
            piece = self._pieces[token] = buffer.raw[:length]
        return piece

    def _text(self, token: int) -> str:
        if token < 0:
            return ""
        return self._lib.llama_vocab_get_text(self._vocab, token).decode("utf-8", "replace")

    def _special_tokens(self) -> tuple[frozenset[int], list[int]]:
        """The ids that end a continuation (the model's end-of-generation tokens and its
        beginning-of-text token), and those never sampled: control, unused and unknown
        tokens, and added tokens that are not whitespace (markup such as Gemma's
        ``<start_of_image>`` or ``<h1>``; its tokens made of newlines are ordinary text)."""
        lib, vocab = self._lib, self._vocab
        stop = {t for t in range(self.size) if lib.llama_vocab_is_eog(vocab, t)}
        if self.bos_token_id >= 0:
            stop.add(self.bos_token_id)
        banned = []
        for token in range(self.size):
            if token in stop:
                continue
            attr = lib.llama_vocab_get_attr(vocab, token)
            if attr & (_UNKNOWN | _UNUSED | _CONTROL) or (
                attr & _USER_DEFINED and self._piece(token).decode("utf-8", "replace").strip()
            ):
                banned.append(token)
        return frozenset(stop), banned
