"""What an OpenAI-compatible server says about itself: the models it serves, their windows.

Chat Completions carries no context window; the servers people run locally say it elsewhere:

- vLLM: ``GET /v1/models``, each entry's ``max_model_len``.
- llama.cpp (``llama-server``): ``GET /props``, ``default_generation_settings.n_ctx`` (the
  window the server was started with, ``-c``); ``GET /v1/models`` has only the model's training
  window (``meta.n_ctx_train``), used when ``/props`` does not answer.
- Ollama: ``POST /api/show``, ``num_ctx`` in the model's ``parameters``; without one the server
  runs the model with its default window, so the smaller of that default and the model's own
  ``<arch>.context_length`` is taken (a window too small compacts early, one too large has
  Ollama cut the prompt silently).
- Others (OpenRouter, LM Studio, gateways): an entry's ``context_length`` /
  ``max_context_length`` / ``context_window``.

Every answer is untrusted: bounded in size and time, and anything unreadable is "not said".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import httpx

__all__ = [
    "ANSWER_LIMIT",
    "OLLAMA_DEFAULT_NUM_CTX",
    "ServerQueryError",
    "models_url",
    "ollama_window",
    "props_window",
    "read_answer",
    "served_model_ids",
    "server_root",
    "window_from_models",
]

ANSWER_LIMIT = 1024 * 1024
"""The most of one discovery answer that is read; a longer one is not believed."""

OLLAMA_DEFAULT_NUM_CTX = 4096
"""The window Ollama gives a model whose parameters set no ``num_ctx``."""

_ENTRY_WINDOW_KEYS = ("max_model_len", "context_length", "max_context_length", "context_window")
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


class ServerQueryError(Exception):
    """A server could not be asked what it serves (unreachable, refused, or an answer that is not
    a model list); the message names the URL and why, and ``status`` is the HTTP status of a
    refusal (``None`` otherwise)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _positive(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, float) and value.is_integer() and value > 0:
        return int(value)
    return None


def server_root(chat_endpoint: str) -> str:
    """The base of a server's own routes (``/props``, ``/api/show``): the chat endpoint without
    ``/chat/completions`` and a trailing ``/v1``."""
    base = chat_endpoint.removesuffix("/chat/completions")
    return base.removesuffix("/v1")


def models_url(chat_endpoint: str) -> str:
    """``GET`` here lists the served models: the chat endpoint's sibling ``/models``."""
    return chat_endpoint.removesuffix("/chat/completions") + "/models"


def _entries(answer: Any) -> list[dict[str, Any]]:
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        data = answer.get("models") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        return []
    return [entry for entry in data if isinstance(entry, dict)]


def served_model_ids(answer: Any) -> list[str]:
    """The model ids of a ``/v1/models`` answer, in the server's order."""
    ids: list[str] = []
    for entry in _entries(answer):
        name = entry.get("id", entry.get("model", entry.get("name")))
        if isinstance(name, str) and name and name not in ids:
            ids.append(name)
    return ids


def _entry_for(answer: Any, model: str) -> dict[str, Any] | None:
    entries = _entries(answer)
    for entry in entries:
        if model in (entry.get("id"), entry.get("model"), entry.get("name")):
            return entry
    return entries[0] if len(entries) == 1 else None  # a one-model server serves any name


def window_from_models(answer: Any, model: str) -> tuple[int | None, bool]:
    """The window a ``/v1/models`` answer gives ``model``, and whether the server looks like
    llama.cpp (whose real window is in ``/props``)."""
    entry = _entry_for(answer, model)
    if entry is None:
        return None, False
    for key in _ENTRY_WINDOW_KEYS:
        if (window := _positive(entry.get(key))) is not None:
            return window, False
    meta = entry.get("meta")
    if isinstance(meta, dict):
        return _positive(meta.get("n_ctx_train")), True
    return None, False


def props_window(answer: Any) -> int | None:
    """llama.cpp's ``/props``: the server's ``n_ctx``."""
    if not isinstance(answer, dict):
        return None
    settings = answer.get("default_generation_settings")
    if isinstance(settings, dict) and (window := _positive(settings.get("n_ctx"))) is not None:
        return window
    return _positive(answer.get("n_ctx"))


def ollama_window(answer: Any) -> int | None:
    """Ollama's ``/api/show``: ``num_ctx`` from the parameters, else the smaller of Ollama's
    default and the model's own context length."""
    if not isinstance(answer, dict):
        return None
    parameters = answer.get("parameters")
    if isinstance(parameters, str) and (found := _NUM_CTX.search(parameters)):
        return _positive(int(found.group(1)))
    info = answer.get("model_info")
    if not isinstance(info, dict):
        return None
    lengths = [
        window
        for key, value in info.items()
        if isinstance(key, str) and key.endswith(".context_length")
        if (window := _positive(value)) is not None
    ]
    return min(OLLAMA_DEFAULT_NUM_CTX, *lengths) if lengths else None


async def read_answer(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    limits: httpx.Timeout,
    body: Any = None,
) -> Any:
    """The JSON answer of one discovery request; ``ServerQueryError`` for anything else (no
    connection, a non-2xx status, more than ``ANSWER_LIMIT`` bytes, not JSON)."""
    content = None if body is None else json.dumps(body).encode()
    try:
        async with client.stream(
            method, url, headers=dict(headers), content=content, timeout=limits
        ) as response:
            if not response.is_success:
                raise ServerQueryError(
                    f"{url} answered HTTP {response.status_code}", response.status_code
                )
            raw = bytearray()
            async for piece in response.aiter_bytes():
                raw += piece
                if len(raw) > ANSWER_LIMIT:
                    raise ServerQueryError(f"{url} answered more than {ANSWER_LIMIT} bytes")
    except httpx.HTTPError as error:
        detail = str(error) or type(error).__name__
        raise ServerQueryError(f"{url} could not be reached: {detail}") from None
    try:
        return json.loads(bytes(raw))
    except ValueError:
        raise ServerQueryError(f"{url} answered something that is not JSON") from None
