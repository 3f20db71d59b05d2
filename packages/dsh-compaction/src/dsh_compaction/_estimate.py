"""The fixed pricing heuristic (no tokenizer): a block costs a quarter of its length plus a fixed
overhead, a message its blocks plus one for its role.

Lengths are UTF-16 code units (what a JavaScript string's ``length`` counts), so prices equal the
TypeScript harness's for the same log. Prices work on wire objects (the JSON a log holds), the one
form every message, chunk and header has here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dsh_llm import Message
from dsh_session import EpochHeader, dumps_canonical

__all__ = [
    "BLOCK_OVERHEAD",
    "ROLE_OVERHEAD",
    "estimate_content",
    "estimate_envelope",
    "estimate_message",
    "estimate_wire_message",
    "utf16_length",
]

CHARS_PER_TOKEN = 4
BLOCK_OVERHEAD = 4
"""Tokens every block costs beyond its text (framing, type tag)."""
ROLE_OVERHEAD = 4
"""Tokens every message costs beyond its blocks (the role)."""


def utf16_length(text: str) -> int:
    """``len`` in UTF-16 code units: a character beyond the Basic Multilingual Plane counts 2."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _quarter(text: str) -> int:
    return -(-utf16_length(text) // CHARS_PER_TOKEN)


def _json_quarter(value: object) -> int:
    return _quarter(dumps_canonical(value).decode("utf-8", "surrogatepass"))


def estimate_content(blocks: Iterable[Mapping[str, Any]]) -> int:
    """The price of content blocks (wire objects): text and reasoning ``ceil(len/4) + 4``; a
    tool call ``ceil(len(name)/4) + ceil(len(arguments)/4) + 4``; a tool result its inner content
    ``+ 4``; any other block (an image) ``4 + ceil(len(JSON)/4)``."""
    tokens = 0
    for block in blocks:
        kind = block.get("type")
        if kind == "text" or kind == "reasoning":
            tokens += _quarter(block.get("text", "")) + BLOCK_OVERHEAD
        elif kind == "tool-call":
            tokens += (
                _quarter(block.get("name", ""))
                + _quarter(block.get("arguments", ""))
                + BLOCK_OVERHEAD
            )
        elif kind == "tool-result":
            tokens += estimate_content(block.get("content") or ()) + BLOCK_OVERHEAD
        else:
            tokens += BLOCK_OVERHEAD + _json_quarter(block)
    return tokens


def estimate_wire_message(message: Mapping[str, Any]) -> int:
    """The price of one message in its wire form (``{"content": [...], ...}``)."""
    return estimate_content(message.get("content") or ()) + ROLE_OVERHEAD


def estimate_message(message: Message) -> int:
    """The price of one message, with no session state: its blocks plus 4 for the role (a
    one-block user message ``"abcd"`` costs 9)."""
    return estimate_wire_message(message.to_wire())


def estimate_envelope(header: EpochHeader | None) -> int:
    """What every request of a header costs besides the conversation: the system prompt
    ``ceil(len/4) + 4``, the tool list ``ceil(len(JSON)/4) + 4`` when non-empty, and each
    message of the session prefix (``messagePrefix``), which every request carries too."""
    if header is None:
        return 0
    tokens = 0
    if header.system:
        tokens += _quarter(header.system) + ROLE_OVERHEAD
    if header.tools:
        tokens += _json_quarter(header.tools) + BLOCK_OVERHEAD
    prefix: Sequence[Mapping[str, Any]] = header.message_prefix or ()
    for message in prefix:
        tokens += estimate_wire_message(message)
    return tokens
