"""A model served by another program over HTTP: any server with an OpenAI-compatible
``/v1/completions`` endpoint (vLLM, TGI, llama.cpp's server, llama-cpp-python, Ollama).

Chosen by a model card with ``backend = "openai"``; its ``[options]`` say where the server
is and how long to wait for it (see :data:`OPTIONS` and docs/deployment.md). The prompt is
sent as raw text (the completions endpoint, not chat) with every sampling setting the app
means, neutral ones included (:meth:`OpenAIBackend.request_parameters`), so the server's
own defaults (llama.cpp's ``min_p`` 0.05, for one) do not apply on top. The text is
streamed back as server-sent events and cut at the first sentence like every other
backend's.

Every call is bounded (:mod:`cyoa.generation.http_call`): connect and read timeouts, a
deadline for the whole answer, caps on the bytes, characters and tokens received
(:mod:`cyoa.generation.completion_reply`), and a stop from the caller
(:mod:`cyoa.generation.stopping`) that closes the connection at once. A reply that is not
a completion (an HTML page, JSON without choices, an empty body, garbage events) is a
:class:`ModelServerError` naming the server and what came back, never an empty answer.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from cyoa.generation.completion_reply import (
    Limits,
    ReplyProblem,
    Report,
    completion_pieces,
    describe,
)
from cyoa.generation.http_call import Bounds, CallFailed, request
from cyoa.generation.stopping import GenerationStopped, stop_requested
from cyoa.generation.types import ModelCard, Sampling

# The card's [options] for this backend, with their defaults (None: required).
OPTIONS: dict[str, Any] = {
    # Where the server listens, without the /v1 part, e.g. "http://10.0.0.5:8000".
    "base_url": None,
    # The model name the server knows (its GET /v1/models lists them).
    "model": None,
    # The NAME of an environment variable holding the API key; the key itself never goes
    # in a card. Empty: no key is sent.
    "api_key_env": "",
    # Seconds to wait for the server to answer (connecting, then the longest silence).
    "timeout_seconds": 30.0,
    # Seconds one whole answer may take, from the request to its last piece.
    "deadline_seconds": 120.0,
    # Seconds the app waits at start for the server to come up (it may still be loading).
    "wait_seconds": 60.0,
    # Whether to send top_k: vLLM, TGI, llama.cpp and Ollama accept it; OpenAI's own API
    # rejects it, so set false there (top_k then has no effect).
    "send_top_k": True,
    # Whether to send the neutral settings beyond OpenAI's own (min_p 0, repeat_penalty and
    # repetition_penalty 1, typical_p 1), which switch llama.cpp's and vLLM's defaults off;
    # OpenAI's own API rejects them, so set false there.
    "send_neutral_settings": True,
}
CONNECT_TIMEOUT_SECONDS = 5.0
# The bytes a reply may take: a margin, and room for each token's event (JSON, timings).
REPLY_BYTES_MARGIN = 65536
REPLY_BYTES_PER_TOKEN = 4096
# The most a GET of /v1/models may return, in bytes.
LISTING_MAX_BYTES = 1_000_000
# Which name each sampling setting the app sends has in llama.cpp's generation_settings.
_ECHOED_AS = {
    "top_k": "top_k",
    "top_p": "top_p",
    "temperature": "temperature",
    "min_p": "min_p",
    "repeat_penalty": "repeat_penalty",
    "typical_p": "typical_p",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "seed": "seed",
    "max_tokens": "n_predict",
}


class ModelServerError(RuntimeError):
    """The model server could not be reached, refused a request or sent something that is
    not a completion; the message names the server's URL and says what to check."""


class SettingRefused(ModelServerError):
    """The model server refused a sampling setting the request carried (the message names
    it and the option that leaves it out)."""


class OpenAIBackend:
    """Continues text through a remote OpenAI-compatible completions endpoint.

    :meth:`stream` sends the card's model name, the prompt and
    :meth:`request_parameters`, and yields each streamed piece of text as it arrives.
    Whether the same seed gives the same text depends on the server (llama.cpp and vLLM
    honour it).
    """

    def __init__(self, card: ModelCard) -> None:
        self.card = card
        options = {**OPTIONS, **card.options}
        self.base_url = str(options["base_url"] or "").rstrip("/")
        self.model = str(options["model"] or "")
        if not self.base_url or not self.model:
            raise ValueError(
                f"Model card {card.name!r}: the openai backend needs options.base_url "
                "and options.model."
            )
        self.api_key_env = str(options["api_key_env"])
        self.timeout_seconds = float(options["timeout_seconds"])
        self.deadline_seconds = float(options["deadline_seconds"])
        self.wait_seconds = float(options["wait_seconds"])
        self.send_top_k = bool(options["send_top_k"])
        self.send_neutral_settings = bool(options["send_neutral_settings"])

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Accept": accept, "Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env, "")
            if not key:
                raise ModelServerError(
                    f"Model card {self.card.name!r} reads its API key from the environment "
                    f"variable {self.api_key_env}, which is not set: set it before starting "
                    "the app."
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _bounds(self, deadline: float, max_bytes: int) -> Bounds:
        connect = min(CONNECT_TIMEOUT_SECONDS, self.timeout_seconds)
        return Bounds(connect, self.timeout_seconds, deadline, max_bytes)

    def load(self, log: Callable[[str], None] = print) -> None:
        """Check that the server answers and serves this card's model (when it lists its
        models at ``/v1/models``), waiting up to ``wait_seconds`` for it to come up. Raises
        :class:`ModelServerError` otherwise."""
        url = f"{self.base_url}/v1/models"
        deadline = time.monotonic() + self.wait_seconds
        bounds = self._bounds(self.timeout_seconds, LISTING_MAX_BYTES)
        while True:
            try:
                with request("GET", url, None, self._headers("application/json"), bounds) as reply:
                    status, body = reply.status, reply.read()
                    content_type = reply.content_type
                break
            except CallFailed as failure:
                if failure.reason != "unreachable" or time.monotonic() >= deadline:
                    raise self._failed(url, failure, None) from failure
                log(f"{self.card.name}: waiting for the model server at {self.base_url}…")
                time.sleep(1.0)
        if status == 404:
            log(f"{self.card.name}: {self.base_url} does not list its models; name not checked")
            return
        self._check(status, body, url, {})
        try:
            listed = json.loads(body)["data"]
            served = [m.get("id") for m in listed if isinstance(m, dict)]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ModelServerError(
                f"{url} answered with {describe(body, content_type)}, not a list of models: is "
                f"{self.base_url} an OpenAI-compatible server (options.base_url in model card "
                f"{self.card.name!r})?"
            ) from None
        if served and self.model not in served:
            raise ModelServerError(
                f"The model server at {self.base_url} serves {', '.join(map(str, served))}, "
                f"not {self.model!r}: set options.model in model card {self.card.name!r} to "
                "one of those."
            )
        log(f"{self.card.name}: model {self.model} is served by {self.base_url}")

    def request_parameters(self, sampling: Sampling, seed: int) -> dict[str, Any]:
        """Every sampling setting a request carries: the card's ``max_tokens``,
        ``temperature``, ``top_p``, ``top_k`` (0: off; left out when ``send_top_k`` is
        false), the ``seed``, and the neutral values of what the app does not use (no
        presence or frequency penalty; with ``send_neutral_settings`` no ``min_p``,
        repetition penalty or typical sampling, under llama.cpp's and vLLM's names)."""
        parameters: dict[str, Any] = {
            "max_tokens": sampling.max_new_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            "seed": seed,
        }
        if self.send_top_k:
            parameters["top_k"] = sampling.top_k
        if self.send_neutral_settings:
            parameters |= {
                "min_p": 0.0,
                "repeat_penalty": 1.0,
                "repetition_penalty": 1.0,
                "typical_p": 1.0,
            }
        return parameters

    def stream(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        """Yield the continuation piece by piece as the server streams it (empty pieces are
        left out), at most ``max_new_tokens`` pieces. The connection is closed when the
        caller stops iterating (which tells the server to stop generating), when the
        caller's stop is asked (:class:`GenerationStopped`), or when a bound is reached
        (:class:`ModelServerError`)."""
        yield from self._stream(prompt, sampling, seed, Report())

    def _stream(self, prompt: str, sampling: Sampling, seed: int, report: Report) -> Iterator[str]:
        url = f"{self.base_url}/v1/completions"
        parameters = self.request_parameters(sampling, seed)
        body = {"model": self.model, "prompt": prompt, **parameters, "stream": True}
        tokens = sampling.max_new_tokens
        bounds = self._bounds(
            self.deadline_seconds, REPLY_BYTES_MARGIN + REPLY_BYTES_PER_TOKEN * tokens
        )
        headers = self._headers("text/event-stream")
        data = json.dumps(body).encode()
        try:
            with request("POST", url, data, headers, bounds, stop_requested()) as reply:
                if reply.status >= 400:
                    self._check(reply.status, reply.read(), url, parameters)
                limits = Limits.for_tokens(tokens)
                yield from completion_pieces(reply.chunks, reply.content_type, limits, report)
        except CallFailed as failure:
            raise self._failed(url, failure, tokens) from None
        except ReplyProblem as problem:
            raise ModelServerError(f"The model server at {url} {problem}.") from None

    def check_sampling(self, sampling: Sampling, prompt: str, seed: int = 1) -> list[str]:
        """Sentences saying how the server does not sample as ``sampling`` says, from one
        request: a setting it refuses (an HTTP 400 or 422 naming it), or one its reply says
        it used with another value (a ``generation_settings`` object, as llama.cpp's server
        reports). Empty when neither shows; :class:`ModelServerError` when the request fails
        otherwise (the server is down, hangs, or sends no completion)."""
        report = Report()
        try:
            for _ in self._stream(prompt, sampling, seed, report):
                pass
        except SettingRefused as error:
            return [str(error)]
        sent = self.request_parameters(sampling, seed)
        return [
            f"The model server at {self.base_url} sampled with {echoed} = "
            f"{report.settings[echoed]!r} where model card {self.card.name!r} sent "
            f"{name} = {value!r}: it does not sample as the card says."
            for name, value in sent.items()
            if (echoed := _ECHOED_AS.get(name)) in report.settings
            and not _same(report.settings[echoed], value)
        ]

    def _failed(self, url: str, failure: CallFailed, tokens: int | None) -> Exception:
        card = self.card.name
        if failure.reason == "stopped":
            return GenerationStopped(f"The call to the model server at {url} was stopped.")
        if failure.reason == "unreachable":
            return ModelServerError(
                f"Cannot reach the model server at {url} ({failure.detail}): check that it is "
                f"running and that options.base_url in model card {card!r} is right."
            )
        if failure.reason == "silent":
            return ModelServerError(
                f"The model server at {url} sent nothing for {self.timeout_seconds:g} s; it may "
                f"be overloaded (options.timeout_seconds in model card {card!r})."
            )
        if failure.reason == "deadline":
            limit = self.deadline_seconds if tokens is not None else self.timeout_seconds
            option = "deadline_seconds" if tokens is not None else "timeout_seconds"
            return ModelServerError(
                f"The model server at {url} did not finish its answer within {limit:g} s; it "
                f"may be overloaded, or it is not sending a completion (options.{option} in "
                f"model card {card!r})."
            )
        if failure.reason == "too_big":
            return ModelServerError(
                f"The model server at {url} sent {failure.detail}"
                + (f" for at most {tokens} tokens" if tokens is not None else "")
                + ", which is not a model's answer."
            )
        return ModelServerError(
            f"The connection to the model server at {url} broke ({failure.detail}): check "
            "that it is running."
        )

    def _check(self, status: int, body: bytes, url: str, parameters: dict[str, Any]) -> None:
        if status < 400:
            return
        message = _error_message(body)
        refused = [
            name
            for name in parameters
            if status in (400, 422) and re.search(rf"\b{re.escape(name)}\b", message)
        ]
        if refused:
            option = "send_top_k" if refused[0] == "top_k" else "send_neutral_settings"
            raise SettingRefused(
                f"The model server at {url} refused the setting {refused[0]} (HTTP {status}: "
                f"{message}): it cannot sample as model card {self.card.name!r} says. Use a "
                f"server that takes it, or set options.{option} = false to leave it out (the "
                "server's own default then applies: say so in the study's report)."
            )
        hint = ""
        if status in (401, 403):
            hint = f" Check the API key in the environment variable {self.api_key_env or '…'}"
            hint += f" (options.api_key_env in model card {self.card.name!r})."
        raise ModelServerError(
            f"The model server at {url} refused the request (HTTP {status}: {message}).{hint}"
        )


def sent_settings(backend: object, sampling: Sampling, seed: int) -> dict[str, Any] | None:
    """What a request of ``backend`` for ``sampling`` and ``seed`` sends a model server
    (:meth:`OpenAIBackend.request_parameters`); None for a backend that samples in this
    process."""
    if isinstance(backend, OpenAIBackend):
        return backend.request_parameters(sampling, seed)
    return None


def _same(echoed: Any, sent: Any) -> bool:
    """Whether a setting the server echoed is the one it was sent (numbers to 1e-6)."""
    if isinstance(echoed, int | float) and isinstance(sent, int | float):
        return math.isclose(echoed, sent, rel_tol=1e-6, abs_tol=1e-6)
    return echoed == sent


def _error_message(body: bytes) -> str:
    """The server's own explanation of a refused request, as short text."""
    try:
        reply = json.loads(body)
    except ValueError:
        return body[:300].decode("utf-8", errors="replace").strip() or "no explanation"
    if isinstance(reply, dict):
        error = reply.get("error", reply.get("detail", reply))
        if isinstance(error, dict):
            error = error.get("message", error)
        return str(error)[:300]
    return str(reply)[:300]
