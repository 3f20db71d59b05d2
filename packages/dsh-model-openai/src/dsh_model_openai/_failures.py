"""The failure vocabulary: HTTP statuses, transport errors and odd streams as ``LlmFailure``s."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from datetime import UTC
from email.utils import parsedate_to_datetime
from types import MappingProxyType
from typing import Any

import httpx

from dsh_llm import FailureCode, LlmFailure
from dsh_model_openai._overflow import is_context_overflow

__all__ = [
    "FAILURE_CODES",
    "StreamFailure",
    "error_event_failure",
    "provider_message",
    "retry_after_ms",
    "status_failure",
    "transport_failure",
]

FAILURE_CODES: Mapping[FailureCode, str] = MappingProxyType(
    {
        FailureCode.AUTH: "HTTP 401 or 403: the provider refused the API key.",
        FailureCode.RATE_LIMIT: "HTTP 429; retry_after_ms is the provider's Retry-After when "
        "it sent one.",
        FailureCode.SERVER: "HTTP 5xx, an error event inside the stream, or DeepSeek's "
        "insufficient_system_resource finish.",
        FailureCode.TIMEOUT: "no connection within connect_timeout, or no bytes for read_timeout.",
        FailureCode.TRANSPORT: "the connection failed or the stream was cut before the answer "
        "finished.",
        FailureCode.BAD_REQUEST: "another HTTP 4xx (the provider's message included), or a "
        "request that cannot be encoded as JSON.",
        FailureCode.CONTEXT_WINDOW_EXCEEDED: "an error answer whose type, code or message says "
        "the prompt does not fit the model's context window (OpenAI, DeepSeek, llama.cpp, vLLM "
        "and Ollama wordings).",
        FailureCode.EMPTY_RESPONSE: "the stream finished (or ended) with no text, reasoning or "
        "tool call.",
        FailureCode.MALFORMED_RESPONSE: "an event that is not JSON.",
        FailureCode.CONTENT_FILTER: "the provider stopped the answer with finish_reason "
        "content_filter.",
        FailureCode.UNKNOWN: "anything else (the message names the exception); not a provider "
        "fact.",
    }
)
"""Every code of the seam's vocabulary (``dsh_llm.FailureCode``) this adapter delivers, with
what makes it deliver each.

A failure always arrives as the stream's last chunk, ``finish`` with ``reason.kind == "error"``;
``status`` is the HTTP status when there was a response. An unrecognized ``finish_reason`` is
delivered as an error whose code is that reason upper-cased (``"FOO_BAR"`` for ``foo_bar``).
"""

_MESSAGE_LIMIT = 1000
_SECONDS = re.compile(r"\s*\d+(?:\.\d+)?\s*")


class StreamFailure(Exception):
    """Raised inside the adapter to end a stream with ``failure``; never leaves the package."""

    def __init__(self, failure: LlmFailure) -> None:
        self.failure = failure
        super().__init__(failure.message)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def provider_message(body: bytes) -> str:
    """The human part of an error body: ``error.message`` (OpenAI, DeepSeek, vLLM), a top-level
    ``message`` or ``detail``, else the body's text, clipped."""
    text = body.decode("utf-8", errors="replace")
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        return _clip(text) or "(empty body)"
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _clip(error["message"])
        if isinstance(error, str):
            return _clip(error)
        for key in ("message", "detail"):
            if isinstance(parsed.get(key), str):
                return _clip(parsed[key])
    return _clip(text)


def retry_after_ms(headers: httpx.Headers, *, now: float | None = None) -> int | None:
    """The provider's retry hint in milliseconds: ``retry-after-ms``, else ``Retry-After`` as
    seconds or an HTTP-date. ``None`` when absent, unreadable, or not in the future."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None and _SECONDS.fullmatch(raw_ms):
        delay = round(float(raw_ms))
        return delay if delay > 0 else None
    raw = headers.get("retry-after")
    if raw is None:
        return None
    if _SECONDS.fullmatch(raw):
        delay = round(float(raw) * 1000)
        return delay if delay > 0 else None
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000" parses naive; an HTTP-date is always GMT
        when = when.replace(tzinfo=UTC)
    delay = round((when.timestamp() - (time.time() if now is None else now)) * 1000)
    return delay if delay > 0 else None


def _request_id(headers: httpx.Headers) -> str:
    value = headers.get("x-request-id") or headers.get("x-deepseek-request-id")
    return f" (request id {value})" if value else ""


def status_failure(status: int, headers: httpx.Headers, body: bytes, where: str) -> LlmFailure:
    """The failure for a non-2xx answer from ``where``."""
    detail = provider_message(body)
    suffix = _request_id(headers)
    if status in (401, 403):
        return LlmFailure(
            message=f"{where} refused the credentials (HTTP {status}): {detail}{suffix}; "
            "check the API key",
            code=FailureCode.AUTH,
            status=status,
        )
    if status == 429:
        fields: dict[str, Any] = {}
        if (delay := retry_after_ms(headers)) is not None:
            fields["retry_after_ms"] = delay
        return LlmFailure(
            message=f"{where} is rate limiting (HTTP 429): {detail}{suffix}",
            code=FailureCode.RATE_LIMIT,
            status=status,
            **fields,
        )
    if is_context_overflow(status, body, detail):
        return LlmFailure(
            message=f"{where} refused the request (HTTP {status}): {detail}{suffix}",
            code=FailureCode.CONTEXT_WINDOW_EXCEEDED,
            status=status,
        )
    if status >= 500:
        message = f"{where} failed (HTTP {status}): {detail}{suffix}"
        return LlmFailure(message=message, code=FailureCode.SERVER, status=status)
    return LlmFailure(
        message=f"{where} refused the request (HTTP {status}): {detail}{suffix}",
        code=FailureCode.BAD_REQUEST,
        status=status,
    )


def error_event_failure(error: object, where: str) -> LlmFailure:
    """The failure for an ``{"error": ...}`` object inside a 200 answer (a stream event, or a
    JSON body): its numeric ``code``/``status`` classifies it like an HTTP status, else SERVER."""
    body = json.dumps({"error": error}).encode()
    status = None
    if isinstance(error, dict):
        for key in ("status", "code"):
            value = error.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599:
                status = value
                break
    if status is not None:
        failure = status_failure(status, httpx.Headers(), body, where)
        return failure.model_copy(update={"message": f"{failure.message} (inside the stream)"})
    return LlmFailure(
        message=f"{where} sent an error inside the stream: {provider_message(body)}",
        code=FailureCode.SERVER,
    )


def transport_failure(
    error: httpx.HTTPError, where: str, *, connect_timeout: float, read_timeout: float
) -> LlmFailure:
    """The failure for an exception httpx raised while talking to ``where``."""
    detail = str(error) or type(error).__name__
    if isinstance(error, httpx.ConnectTimeout | httpx.PoolTimeout):
        return LlmFailure(
            message=f"could not connect to {where} within {connect_timeout:g}s: {detail}",
            code=FailureCode.TIMEOUT,
        )
    if isinstance(error, httpx.TimeoutException):
        return LlmFailure(
            message=f"{where} sent nothing for {read_timeout:g}s (read timeout): {detail}",
            code=FailureCode.TIMEOUT,
        )
    if isinstance(error, httpx.ConnectError):
        return LlmFailure(
            message=f"could not connect to {where}: {detail}", code=FailureCode.TRANSPORT
        )
    return LlmFailure(
        message=f"the connection to {where} failed: {type(error).__name__}: {detail}",
        code=FailureCode.TRANSPORT,
    )
