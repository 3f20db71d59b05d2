"""A ``ModelRequest`` as a Chat Completions request body."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import JsonValue

from dsh_llm import (
    AssistantMessage,
    ImageBlock,
    Message,
    ModelRequest,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["REASONING_REPLAYS", "ReasoningReplay", "encode_request"]

ReasoningReplay = Literal["current-turn", "never", "always"]
"""Which earlier assistant messages carry their reasoning back as ``reasoning_content``.

- ``"current-turn"`` (the default): only the assistant messages after the last user message,
  that is the tool-call steps of the turn in progress. DeepSeek's thinking mode requires exactly
  this: reasoning is passed back while a turn calls tools and never for earlier turns.
- ``"never"``: no reasoning is sent back (providers that refuse the field).
- ``"always"``: every assistant message with reasoning sends it back.
"""

REASONING_REPLAYS: tuple[ReasoningReplay, ...] = ("current-turn", "never", "always")

_EMPTY_TOOL_OUTPUT = "(no output)"


def _user_content(blocks: Sequence[TextBlock | ImageBlock]) -> str | list[dict[str, Any]]:
    """Text only: one string (every provider takes it). With images: content parts."""
    if all(isinstance(block, TextBlock) for block in blocks):
        return "".join(block.text for block in blocks if isinstance(block, TextBlock))
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif block.is_inline:
            url = f"data:{block.mime_type};base64,{block.data}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:  # a stored attachment: its bytes live in an attachment store this model lacks
            parts.append({"type": "text", "text": _attachment_placeholder(block)})
    return parts


def _attachment_placeholder(block: ImageBlock) -> str:
    """What the model reads in place of an image stored as an attachment."""
    attachment = block.attachment
    assert attachment is not None
    name = attachment.name or attachment.attachment_id
    size = f"{attachment.width}x{attachment.height}"
    return f"[image attachment not available: {name} ({attachment.media_type}, {size})]"


def _tool_content(message: ToolResultMessage) -> str:
    """A tool message's text; Chat Completions takes no images there, so each is named instead."""
    pieces = [
        block.text if isinstance(block, TextBlock) else f"[image omitted: {block.media_type}]"
        for block in message.result.content
    ]
    return "".join(pieces) or _EMPTY_TOOL_OUTPUT


def _assistant(message: AssistantMessage, *, with_reasoning: bool) -> dict[str, Any]:
    text = "".join(block.text for block in message.content if isinstance(block, TextBlock))
    # Always a string, never null: gateways refuse null, and DeepSeek refuses an assistant
    # message with neither content nor tool calls (a reasoning-only answer).
    entry: dict[str, Any] = {"role": "assistant", "content": text}
    if with_reasoning:
        reasoning = "".join(
            block.text for block in message.content if isinstance(block, ReasoningBlock)
        )
        if reasoning:
            entry["reasoning_content"] = reasoning
    calls = [
        {
            "id": block.id,
            "type": "function",
            "function": {"name": block.name, "arguments": block.arguments},
        }
        for block in message.content
        if isinstance(block, ToolCallBlock)
    ]
    if calls:
        entry["tool_calls"] = calls
    return entry


def _messages(request: ModelRequest, replay: ReasoningReplay) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if request.system:
        wire.append({"role": "system", "content": request.system})
    history: list[Message] = request.messages
    turn_start = max(
        (i for i, message in enumerate(history) if isinstance(message, UserMessage)), default=-1
    )
    for position, message in enumerate(history):
        if isinstance(message, UserMessage):
            wire.append({"role": "user", "content": _user_content(message.content)})
        elif isinstance(message, AssistantMessage):
            with_reasoning = replay == "always" or (
                replay == "current-turn" and position > turn_start
            )
            wire.append(_assistant(message, with_reasoning=with_reasoning))
        else:
            wire.append(
                {
                    "role": "tool",
                    "tool_call_id": message.result.tool_call_id,
                    "content": _tool_content(message),
                }
            )
    return _one_user_turn_each(wire)


_USER_JOIN = "\n\n"


def _as_parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _one_user_turn_each(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive user messages as one user message (texts joined by a blank line).

    Strict chat templates (Gemma, Mistral) refuse two user messages in a row ("Conversation roles
    must alternate"), and small models answer the last one as if it were the question. The log
    keeps each message as it was; only the wire merges them.
    """
    merged: list[dict[str, Any]] = []
    for entry in wire:
        previous = merged[-1] if merged else None
        if previous is None or entry["role"] != "user" or previous["role"] != "user":
            merged.append(entry)
            continue
        before, after = previous["content"], entry["content"]
        content: str | list[dict[str, Any]]
        if not after or not before:  # an empty message adds nothing
            content = before or after
        elif isinstance(before, str) and isinstance(after, str):
            content = f"{before}{_USER_JOIN}{after}"
        else:
            separator = [{"type": "text", "text": _USER_JOIN}]
            content = [*_as_parts(before), *separator, *_as_parts(after)]
        merged[-1] = {"role": "user", "content": content}
    return merged


def encode_request(
    request: ModelRequest,
    *,
    default_model: str,
    reasoning_replay: ReasoningReplay,
    extra_body: Mapping[str, JsonValue],
) -> bytes:
    """The UTF-8 JSON body for ``request``: ``extra_body`` first, then what the request sets.

    Raises ``ValueError`` when a value cannot be JSON (``NaN`` in a tool schema, for example).
    """
    body: dict[str, Any] = dict(extra_body)
    body["model"] = request.model or default_model
    body["messages"] = _messages(request, reasoning_replay)
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in request.tools
        ]
    sampling = request.sampling
    for key, value in (
        ("temperature", sampling.temperature),
        ("top_p", sampling.top_p),
        ("stop", sampling.stop),
        ("reasoning_effort", sampling.reasoning_effort),
        ("max_tokens", request.max_tokens),
    ):
        if value is not None:
            body[key] = value
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
