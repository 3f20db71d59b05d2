"""``OpenAICompatibleModel``: the ``Model`` protocol over streaming Chat Completions."""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any, NoReturn

import httpx
from pydantic import JsonValue
from pydantic_core import from_json

from dsh_llm import FailureCode, FinishChunk, FinishReason, LlmFailure, ModelRequest, StreamChunk
from dsh_model_openai._body import REASONING_REPLAYS, ReasoningReplay, encode_request
from dsh_model_openai._discover import (
    ServerQueryError,
    models_url,
    ollama_window,
    props_window,
    read_answer,
    served_model_ids,
    server_root,
    window_from_models,
)
from dsh_model_openai._failures import (
    StreamFailure,
    provider_message,
    status_failure,
    transport_failure,
)
from dsh_model_openai._overflow import stated_window
from dsh_model_openai._sse import DONE, SseDecoder
from dsh_model_openai._translate import Translator

__all__ = ["OpenAICompatibleModel"]

_ERROR_BODY_LIMIT = 64 * 1024
_DRAIN_AFTER_DONE = 0.5  # seconds to wait for the body's end after [DONE], to keep the connection
_REDACTED = "<redacted>"
_DISCOVERY_READ_TIMEOUT = 10.0  # seconds: a server's self-description is small and quick


class _Secret:
    """An API key that never shows itself: not in a repr, ``str``, ``vars`` dump or pickle."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return _REDACTED

    __str__ = __repr__

    def __reduce__(self) -> NoReturn:
        raise TypeError("an API key cannot be pickled")


def _endpoint(base_url: str) -> str:
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(
            f"base_url must be an http:// or https:// URL with a host, got {base_url!r} "
            "(for example 'https://api.deepseek.com' or 'http://localhost:11434/v1')"
        )
    text = str(url).rstrip("/")
    return text if text.endswith("/chat/completions") else f"{text}/chat/completions"


def _positive(name: str, value: float) -> float:
    if not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


class OpenAICompatibleModel:
    """A ``dsh_llm.Model`` that streams OpenAI-compatible Chat Completions over HTTP/1.1.

    ``base_url`` is everything before ``/chat/completions`` (``https://api.deepseek.com``,
    ``https://api.openai.com/v1``, ``http://localhost:8000/v1``); ``api_key`` is sent as
    ``Authorization: Bearer``, or nothing is sent when it is ``None``; ``model`` is the model name
    this adapter reports (``.model``) and sends when a request's ``model`` is empty. A request's
    own non-empty ``model`` is what goes on the wire.

    Keyword options: ``reasoning_replay`` (see ``ReasoningReplay``); ``connect_timeout`` (seconds
    to connect) and ``read_timeout`` (the longest silence allowed while waiting for the answer's
    next bytes, the first included); ``headers`` added to every request; ``extra_body``, fields
    added to every request body that the request's own fields override (DeepSeek's
    ``{"thinking": {"type": "enabled"}}``, a default ``max_tokens``); ``http_client``, an
    ``httpx.AsyncClient`` to use instead of the model's own (its owner closes it);
    ``context_window``, the window in tokens this model reports (``dsh_llm.ModelInfo``); when
    it is ``None``, ``discover_context_window(model)`` asks the server once (vLLM, llama.cpp,
    Ollama and gateways say it outside Chat Completions) and ``context_window`` reports what it
    said. ``served_models()`` lists what the server serves.

    ``stream(request)`` never raises for a provider or network problem: the stream's last chunk
    is ``finish`` with ``reason.kind == "error"`` and an ``LlmFailure`` whose ``code`` is one of
    ``FAILURE_CODES``. Cancelling the consuming task, or ``aclose()`` on the iterator, closes the
    HTTP stream at once. The API key appears in no repr, failure message or log line.

    Connections are pooled per event loop and kept alive between calls; ``aclose()`` (or
    ``async with``) releases them before the loop ends. The model may be streamed again after.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        reasoning_replay: ReasoningReplay = "current-turn",
        connect_timeout: float = 10.0,
        read_timeout: float = 300.0,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, JsonValue] | None = None,
        http_client: httpx.AsyncClient | None = None,
        context_window: int | None = None,
    ) -> None:
        self._endpoint = _endpoint(base_url)
        if context_window is not None and (
            isinstance(context_window, bool)
            or not isinstance(context_window, int)
            or context_window <= 0
        ):
            raise ValueError(
                f"context_window must be a positive number of tokens or None, "
                f"got {context_window!r}"
            )
        self._context_window = context_window
        self._base_url = base_url
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must be a non-empty model name, for example 'deepseek-chat'")
        self._model = model
        if api_key is not None and not api_key.strip():
            raise ValueError("api_key is blank; pass None for a server that needs no key")
        self._key = _Secret(api_key.strip()) if api_key is not None else None
        if reasoning_replay not in REASONING_REPLAYS:
            raise ValueError(
                f"reasoning_replay must be one of {', '.join(REASONING_REPLAYS)}, "
                f"got {reasoning_replay!r}"
            )
        self._reasoning_replay: ReasoningReplay = reasoning_replay
        self._connect_timeout = _positive("connect_timeout", connect_timeout)
        self._read_timeout = _positive("read_timeout", read_timeout)
        self._timeout = httpx.Timeout(
            self._read_timeout, connect=self._connect_timeout, pool=self._connect_timeout
        )
        self._extra_headers = dict(headers or {})
        self._extra_body: dict[str, JsonValue] = dict(extra_body or {})
        self._external = http_client
        self._owned: httpx.AsyncClient | None = None
        self._owned_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._where = self._redact(self._endpoint)
        self._discovered: dict[str, int | None] = {}
        self._refused_at: dict[str, int] = {}

    def context_window(self, model: str) -> int | None:
        """The window of ``model`` in tokens (`dsh_llm.ModelInfo`): the configured
        ``context_window``, else what ``discover_context_window`` learnt from the server, else
        ``None``."""
        if self._context_window is not None:
            return self._context_window
        return self._discovered.get(model or self._model)

    def overflow_window(self, model: str) -> int | None:
        """The window the server stated when it last refused a request to ``model`` for its
        size (llama.cpp's ``n_ctx``, "maximum context length is N tokens", ...), or ``None``.
        A caller that was told a larger window (a configuration, a catalog) can trust this one:
        the server has just enforced it."""
        return self._refused_at.get(model or self._model)

    async def served_models(self) -> list[str]:
        """The model ids the server lists at ``GET <base_url>/models``, in its order.

        Raises ``ServerQueryError`` (naming the URL and why) when the server cannot be reached,
        refuses, or answers with something that is not a model list.
        """
        url = models_url(self._endpoint)
        answer = await self._ask("GET", url)
        ids = served_model_ids(answer)
        if not ids and not (isinstance(answer, dict) and isinstance(answer.get("data"), list)):
            raise ServerQueryError(
                f"{self._redact(url)} answered something that is not a model list"
            )
        return ids

    async def discover_context_window(self, model: str = "") -> int | None:
        """Ask the server for ``model``'s window (default: this adapter's model) and remember it.

        The configured ``context_window`` wins without asking. Otherwise the server is asked
        once per model name, whatever it answers: ``GET <base>/models`` (vLLM ``max_model_len``,
        gateways' ``context_length``), llama.cpp's ``GET /props`` (``n_ctx``), Ollama's
        ``POST /api/show`` (``num_ctx``). Never raises: a server that says nothing, or cannot
        be reached, gives ``None``.
        """
        name = model or self._model
        if self._context_window is not None:
            return self._context_window
        if name in self._discovered:
            return self._discovered[name]
        window = await self._ask_window(name)
        self._discovered[name] = window
        return window

    async def _ask_window(self, model: str) -> int | None:
        root = server_root(self._endpoint)
        llama_cpp = False
        try:
            window, llama_cpp = window_from_models(
                await self._ask("GET", models_url(self._endpoint)), model
            )
        except ServerQueryError:
            window = None
        if window is not None and not llama_cpp:
            return window
        try:  # llama.cpp: the window the server runs with, not the model's training window
            served = props_window(await self._ask("GET", f"{root}/props"))
        except ServerQueryError:
            served = None
        if served is not None or llama_cpp:
            return served if served is not None else window
        try:
            return ollama_window(await self._ask("POST", f"{root}/api/show", {"model": model}))
        except ServerQueryError:
            return None

    async def _ask(self, method: str, url: str, body: Any = None) -> Any:
        headers = {**self._headers(), "Accept": "application/json"}
        timeout = httpx.Timeout(
            min(self._read_timeout, _DISCOVERY_READ_TIMEOUT),
            connect=self._connect_timeout,
            pool=self._connect_timeout,
        )
        try:
            return await read_answer(
                self._client(), method, url, headers=headers, limits=timeout, body=body
            )
        except ServerQueryError as error:
            raise ServerQueryError(self._redact(str(error)), error.status) from None

    @property
    def base_url(self) -> str:
        """The base URL as given."""
        return self._base_url

    @property
    def model(self) -> str:
        """The model name this adapter serves by default."""
        return self._model

    @property
    def reasoning_replay(self) -> ReasoningReplay:
        """Which earlier assistant messages send their reasoning back."""
        return self._reasoning_replay

    def __repr__(self) -> str:
        key = "<set>" if self._key is not None else None
        return (
            f"OpenAICompatibleModel(base_url={self._base_url!r}, model={self._model!r}, "
            f"api_key={key})"
        )

    async def __aenter__(self) -> OpenAICompatibleModel:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close this model's pooled connections (never a client passed as ``http_client``)."""
        client, self._owned = self._owned, None
        loop, self._owned_loop = self._owned_loop, None
        if client is not None and loop is not None and loop() is asyncio.get_running_loop():
            await client.aclose()

    def _redact(self, text: str) -> str:
        if self._key is None:
            return text
        return text.replace(self._key.reveal(), _REDACTED)

    def _client(self) -> httpx.AsyncClient:
        if self._external is not None:
            return self._external
        loop = asyncio.get_running_loop()
        if self._owned is None or self._owned_loop is None or self._owned_loop() is not loop:
            # A pool belongs to the loop that opened its connections; a new loop gets its own.
            self._owned = httpx.AsyncClient(timeout=self._timeout, follow_redirects=False)
            self._owned_loop = weakref.ref(loop)
        return self._owned

    def _headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "Accept-Encoding": "identity",
            **self._extra_headers,
        }
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.reveal()}"
        return headers

    def _failed(self, failure: LlmFailure) -> LlmFailure:
        message = self._redact(failure.message)
        return (
            failure
            if message == failure.message
            else failure.model_copy(update={"message": message})
        )

    def _answer(self, payload: bytes) -> Any:
        try:
            return from_json(payload)  # ~2.5x faster than json.loads on chunk-sized objects
        except ValueError:
            pass
        try:  # what from_json refuses and json takes (an escaped lone surrogate)
            return json.loads(payload)
        except ValueError:
            snippet = payload[:200].decode("utf-8", errors="replace")
            raise StreamFailure(
                LlmFailure(
                    message=f"{self._where} sent an event that is not JSON: {snippet!r}",
                    code=FailureCode.MALFORMED_RESPONSE,
                )
            ) from None

    def _event(self, payload: bytes, translator: Translator) -> list[StreamChunk]:
        return translator.feed(self._answer(payload))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Send ``request`` and yield its answer as ``StreamChunk``s, ending with one ``finish``."""
        translator = Translator(self._where)
        try:
            content = encode_request(
                request,
                default_model=self._model,
                reasoning_replay=self._reasoning_replay,
                extra_body=self._extra_body,
            )
        except (TypeError, ValueError) as error:
            failure = LlmFailure(
                message=f"the request cannot be sent as JSON: {error}", code=FailureCode.BAD_REQUEST
            )
            yield FinishChunk(reason=FinishReason(kind="error", error=self._failed(failure)))
            return
        closing: list[StreamChunk]
        try:
            async with self._client().stream(
                "POST",
                self._endpoint,
                content=content,
                headers=self._headers(),
                timeout=self._timeout,
            ) as response:
                if not response.is_success:
                    body = await _error_body(response)
                    failure = status_failure(
                        response.status_code, response.headers, body, self._where
                    )
                    if failure.code == FailureCode.CONTEXT_WINDOW_EXCEEDED:
                        window = stated_window(body, provider_message(body))
                        if window is not None:
                            self._refused_at[request.model or self._model] = window
                    raise StreamFailure(failure)
                content_type = response.headers.get("content-type", "")
                if "json" in content_type and "event-stream" not in content_type:
                    closing = translator.whole(self._answer(await response.aread()))
                else:
                    decoder = SseDecoder()
                    pieces = response.aiter_bytes()
                    done = False
                    async for piece in pieces:
                        for payload in decoder.feed(piece):
                            if payload == DONE:
                                done = True
                                break
                            for chunk in self._event(payload, translator):
                                yield chunk
                        if done:
                            break
                    else:
                        for payload in decoder.close():
                            if payload == DONE:
                                done = True
                                break
                            for chunk in self._event(payload, translator):
                                yield chunk
                    if done:
                        await _drain(pieces)
                    elif translator.has_content and not translator.finish_seen:
                        raise StreamFailure(
                            LlmFailure(
                                message=f"the stream from {self._where} ended before the answer "
                                "finished (no finish reason, no [DONE])",
                                code=FailureCode.TRANSPORT,
                            )
                        )
                    closing = translator.end()
        except StreamFailure as error:
            closing = translator.fail(self._failed(error.failure))
        except httpx.HTTPError as error:
            if translator.finish_seen:  # the answer is whole; only the goodbye was lost
                closing = translator.end()
            else:
                failure = transport_failure(
                    error,
                    self._where,
                    connect_timeout=self._connect_timeout,
                    read_timeout=self._read_timeout,
                )
                closing = translator.fail(self._failed(failure))
        except Exception as error:  # a stream ends with a finish chunk, whatever happened
            failure = LlmFailure(
                message=f"reading the answer from {self._where} failed: "
                f"{type(error).__name__}: {error}",
                code=FailureCode.UNKNOWN,
            )
            closing = translator.fail(self._failed(failure))
        for chunk in closing:
            yield chunk


async def _error_body(response: httpx.Response) -> bytes:
    """Up to 64 KiB of an error answer's body (what arrived, if reading it fails)."""
    body = bytearray()
    try:
        async for piece in response.aiter_bytes():
            body += piece
            if len(body) >= _ERROR_BODY_LIMIT:
                break
    except httpx.HTTPError:
        pass
    return bytes(body)


async def _drain(pieces: AsyncIterator[bytes]) -> None:
    """Read the rest of the body after ``[DONE]`` so the connection returns to the pool; a server
    that keeps the stream open past that gets its connection closed instead."""
    try:
        async with asyncio.timeout(_DRAIN_AFTER_DONE):
            async for _ in pieces:
                pass
    except (TimeoutError, httpx.HTTPError):
        pass
