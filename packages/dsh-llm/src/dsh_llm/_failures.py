"""The failure vocabulary: every ``LlmFailure.code`` with what it means and whether a retry
may help, so a provider adapter, the loop's retry policy and compaction speak one language."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

__all__ = ["FAILURE_CODES", "RETRYABLE_FAILURE_CODES", "FailureCode"]


class FailureCode(StrEnum):
    """The codes of a failed model call (``LlmFailure.code``); each is its own name.

    A provider adapter delivers the first eleven; the agent loop the last four, for streams that
    break the seam's rules. ``LlmFailure.code`` stays a plain string: a log read back may hold
    a code from another tool, and an adapter maps a provider's unknown ``finish_reason`` to that
    reason upper-cased. `FAILURE_CODES` says what each means.
    """

    AUTH = "AUTH"
    RATE_LIMIT = "RATE_LIMIT"
    SERVER = "SERVER"
    TIMEOUT = "TIMEOUT"
    TRANSPORT = "TRANSPORT"
    BAD_REQUEST = "BAD_REQUEST"
    CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
    EMPTY_RESPONSE = "EMPTY_RESPONSE"
    MALFORMED_RESPONSE = "MALFORMED_RESPONSE"
    CONTENT_FILTER = "CONTENT_FILTER"
    UNKNOWN = "UNKNOWN"
    ABORTED = "ABORTED"
    STREAM_CLOSED = "STREAM_CLOSED"
    BAD_CHUNK = "BAD_CHUNK"


FAILURE_CODES: Mapping[FailureCode, str] = MappingProxyType(
    {
        FailureCode.AUTH: "HTTP 401 or 403: the provider refused the API key.",
        FailureCode.RATE_LIMIT: "HTTP 429; retry_after_ms is the provider's Retry-After when "
        "it sent one.",
        FailureCode.SERVER: "HTTP 5xx, an error event inside the stream, or a finish that says "
        "the provider ran out of resources.",
        FailureCode.TIMEOUT: "no connection within the connect timeout, or no bytes for the "
        "read timeout.",
        FailureCode.TRANSPORT: "the connection failed or the stream was cut before the answer "
        "finished.",
        FailureCode.BAD_REQUEST: "another HTTP 4xx (the provider's message included), a request "
        "that cannot be encoded, or a provider the configuration cannot build.",
        FailureCode.CONTEXT_WINDOW_EXCEEDED: "the provider says the prompt does not fit the "
        "model's context window (compaction's overflow path answers it).",
        FailureCode.EMPTY_RESPONSE: "the stream finished with no text, reasoning or tool call.",
        FailureCode.MALFORMED_RESPONSE: "the provider sent an event that cannot be parsed.",
        FailureCode.CONTENT_FILTER: "the provider stopped the answer for its content policy.",
        FailureCode.UNKNOWN: "anything else; the message names the exception.",
        FailureCode.ABORTED: "the model's stream itself reported the answer aborted.",
        FailureCode.STREAM_CLOSED: "the stream ended before its finish chunk.",
        FailureCode.BAD_CHUNK: "the stream sent a chunk the seam does not allow (the loop's "
        "check of a provider adapter).",
    }
)
"""What each `FailureCode` means (every member has an entry)."""

RETRYABLE_FAILURE_CODES: frozenset[FailureCode] = frozenset(
    {
        FailureCode.EMPTY_RESPONSE,
        FailureCode.RATE_LIMIT,
        FailureCode.SERVER,
        FailureCode.TIMEOUT,
        FailureCode.TRANSPORT,
    }
)
"""The codes a retry may cure: a busy or flaky provider, never a refused key or request."""
