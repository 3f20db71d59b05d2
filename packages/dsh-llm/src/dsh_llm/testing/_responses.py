"""Builders of well-formed chunk sequences for ``ScriptedModel`` scripts."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from dsh_llm._chunks import (
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    FinishReason,
    ReasoningDeltaChunk,
    StreamChunk,
    TextDeltaChunk,
    ToolCallDeltaChunk,
    UsageChunk,
)
from dsh_llm._content import ReasoningBlock, TextBlock, ToolCallBlock
from dsh_llm._usage import Usage

__all__ = ["text_response", "tool_call_response"]

_PIECES = re.compile(r"\s*\S+|\s+")


def _pieces(text: str) -> list[str]:
    """Word-sized deltas (leading whitespace kept), as a provider would stream them."""
    return _PIECES.findall(text)


def _text_block(index: int, text: str) -> list[StreamChunk]:
    chunks: list[StreamChunk] = [BlockStartChunk(index=index, block_type="text")]
    chunks += [TextDeltaChunk(index=index, text=piece) for piece in _pieces(text)]
    chunks.append(BlockEndChunk(index=index, block=TextBlock(text=text)))
    return chunks


def _reasoning_block(index: int, text: str) -> list[StreamChunk]:
    chunks: list[StreamChunk] = [BlockStartChunk(index=index, block_type="reasoning")]
    chunks += [ReasoningDeltaChunk(index=index, text=piece) for piece in _pieces(text)]
    chunks.append(BlockEndChunk(index=index, block=ReasoningBlock(text=text)))
    return chunks


def _tool_call_block(index: int, call: ToolCallBlock) -> list[StreamChunk]:
    half = len(call.arguments) // 2
    deltas = [call.arguments[:half], call.arguments[half:]] if half else [call.arguments]
    return [
        BlockStartChunk(index=index, block_type="tool-call"),
        *(
            ToolCallDeltaChunk(index=index, id=call.id, name=call.name, arguments_delta=delta)
            for delta in deltas
        ),
        BlockEndChunk(index=index, block=call),
    ]


def text_response(
    text: str, *, usage: Usage | None = None, reasoning: str | None = None
) -> list[StreamChunk]:
    """A complete answer that says ``text`` and stops.

    Chunks: an optional reasoning block (index 0), the text block streamed word by word, then
    ``usage`` (default: 10 input tokens, one output token per character) and ``finish{stop}``.
    """
    chunks: list[StreamChunk] = []
    if reasoning is not None:
        chunks += _reasoning_block(0, reasoning)
    chunks += _text_block(0 if reasoning is None else 1, text)
    chunks.append(UsageChunk(usage=usage or Usage(input_tokens=10, output_tokens=len(text))))
    chunks.append(FinishChunk(reason=FinishReason(kind="stop")))
    return chunks


ToolCallSpec = ToolCallBlock | tuple[str, str, str | Mapping[str, object]]
"""A call for ``tool_call_response``: a block, or ``(id, name, arguments)`` with arguments as
raw JSON text or a mapping (encoded with ``json.dumps``)."""


def _as_block(call: ToolCallSpec) -> ToolCallBlock:
    if isinstance(call, ToolCallBlock):
        return call
    call_id, name, arguments = call
    raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return ToolCallBlock(id=call_id, name=name, arguments=raw)


def tool_call_response(
    *calls: ToolCallSpec, text: str | None = None, usage: Usage | None = None
) -> list[StreamChunk]:
    """A complete answer that calls tools and finishes with ``tool-calls``.

    Chunks: an optional text block first, then one block per call whose arguments arrive in two
    deltas, then ``usage`` (default 10 in, 5 out) and ``finish{tool-calls}``.
    """
    if not calls:
        raise ValueError("tool_call_response needs at least one call")
    chunks: list[StreamChunk] = []
    index = 0
    if text is not None:
        chunks += _text_block(index, text)
        index += 1
    for call in calls:
        chunks += _tool_call_block(index, _as_block(call))
        index += 1
    chunks.append(UsageChunk(usage=usage or Usage(input_tokens=10, output_tokens=5)))
    chunks.append(FinishChunk(reason=FinishReason(kind="tool-calls")))
    return chunks
