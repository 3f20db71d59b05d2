"""Recognising a context-window overflow in a provider's error answer.

Each server says it differently; the structured field (``error.type`` / ``error.code``) is read
first, the message second. The wordings below are the servers' own, checked 2026-12-04:

- OpenAI: ``code: "context_length_exceeded"``; "This model's maximum context length is N
  tokens…" or "Your input exceeds the context window of this model…".
- DeepSeek: ``code: "invalid_request_error"`` with "This model's maximum context length is N
  tokens. However, you requested M tokens…".
- llama.cpp (``llama-server``): ``type: "exceed_context_size_error"`` with "request (M tokens)
  exceeds the available context size (N tokens), try increasing it"; builds before that type
  said "the request exceeds the available context size, try increasing the context size or
  enable context shift".
- vLLM: "This model's maximum context length is N tokens. However, you requested M tokens…"
  (``type: "BadRequestError"``) and, from the V1 engine, "The decoder prompt (length M) is
  longer than the maximum model length of N".
- Ollama: "prompt too long; exceeded max context length by N tokens" (its OpenAI-compatible
  endpoint otherwise truncates silently).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["is_context_overflow", "stated_window"]

_OVERFLOW_CODES = frozenset(
    {
        "context_length_exceeded",
        "exceed_context_size_error",
        "context_window_exceeded",
        "model_context_window_exceeded",
    }
)
"""``error.code`` / ``error.type`` values that mean the prompt does not fit, whatever the text."""

_STRONG_WORDING = re.compile(
    r"maximum context length"
    r"|exceeds? the (?:available )?context (?:size|window|length)"
    r"|longer than the (?:maximum model length|model'?s context length)"
    r"|prompt too long; exceeded (?:max )?context length"
    r"|context[ _-]?(?:length|window)[ _-]?exceeded",
    re.IGNORECASE,
)
"""Wordings that say a context overflow on any status (a proxy may turn a 400 into a 5xx)."""

_WEAK_WORDING = re.compile(
    r"context[ _-]?(?:length|window|size)|prompt is too long|too many (?:input )?tokens",
    re.IGNORECASE,
)
"""Wordings that mean an overflow only on a 400 or 413 (a 429 or 503 "too many tokens" is
throttling, not a prompt that cannot fit)."""


def _error_object(body: bytes) -> dict[str, Any]:
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    error = parsed.get("error")
    return error if isinstance(error, dict) else parsed


_STATED_WINDOW = re.compile(
    r"maximum context length is (\d{1,10}) tokens"
    r"|available context size \((\d{1,10}) tokens\)"
    r"|maximum model length of (\d{1,10})",
    re.IGNORECASE,
)
"""Where a refusal states the window: OpenAI, DeepSeek and vLLM V0; llama.cpp; vLLM V1."""

_MAX_STATED_WINDOW = 1 << 30
"""A stated window above this is not believed (a garbled answer)."""


def stated_window(body: bytes, message: str) -> int | None:
    """The context window an overflow refusal states (llama.cpp's ``n_ctx`` field, else the
    number in the wording), or ``None`` when it states none."""
    value = _error_object(body).get("n_ctx")
    if not (isinstance(value, int) and not isinstance(value, bool)):
        found = _STATED_WINDOW.search(message)
        value = int(next(g for g in found.groups() if g is not None)) if found else None
    return value if value is not None and 0 < value <= _MAX_STATED_WINDOW else None


def is_context_overflow(status: int, body: bytes, message: str) -> bool:
    """Whether an answer of ``status`` with ``body`` (``message`` its human part) says the
    request does not fit the model's context window."""
    if status < 400 or status == 429:
        return False
    error = _error_object(body)
    for key in ("code", "type"):
        value = error.get(key)
        if isinstance(value, str) and value.strip().lower() in _OVERFLOW_CODES:
            return True
    if _STRONG_WORDING.search(message):
        return True
    return status in (400, 413) and _WEAK_WORDING.search(message) is not None
