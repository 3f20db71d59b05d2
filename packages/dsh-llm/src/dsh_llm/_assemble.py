"""Fold a chunk stream into the assistant message it describes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from dsh_llm._chunks import (
    BlockEndChunk,
    BlockStartChunk,
    BlockType,
    ReasoningDeltaChunk,
    StreamChunk,
    TextDeltaChunk,
    ToolCallDeltaChunk,
)
from dsh_llm._content import AssistantContentBlock, ReasoningBlock, TextBlock, ToolCallBlock
from dsh_llm._messages import AssistantMessage
from dsh_llm._source import ModelSource

__all__ = ["assemble_message"]


@dataclass
class _Open:
    block_type: BlockType | None = None
    parts: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""

    def block(self) -> AssistantContentBlock | None:
        text = "".join(self.parts)
        if self.block_type == "text":
            return TextBlock(text=text)
        if self.block_type == "reasoning":
            return ReasoningBlock(text=text)
        if self.block_type == "tool-call":
            return ToolCallBlock(id=self.call_id, name=self.name, arguments=text)
        return None  # an image only exists once its block-end arrives


def assemble_message(
    chunks: Iterable[StreamChunk], source: ModelSource, *, id: str | None = None
) -> AssistantMessage:
    """The assistant message a chunk stream describes, its blocks in ``index`` order.

    A block's final form is its ``block-end``; a block that started but never ended (a stream
    cut short) is rebuilt from its deltas, so an interrupted answer keeps what arrived.
    """
    ended: dict[int, AssistantContentBlock] = {}
    open_blocks: dict[int, _Open] = {}
    for chunk in chunks:
        if isinstance(chunk, BlockEndChunk):
            ended[chunk.index] = chunk.block
            open_blocks.pop(chunk.index, None)
            continue
        if isinstance(chunk, BlockStartChunk):
            open_blocks[chunk.index] = _Open(block_type=chunk.block_type)
            continue
        if isinstance(chunk, TextDeltaChunk | ReasoningDeltaChunk):
            open_blocks.setdefault(chunk.index, _Open()).parts.append(chunk.text)
        elif isinstance(chunk, ToolCallDeltaChunk):
            state = open_blocks.setdefault(chunk.index, _Open(block_type="tool-call"))
            state.call_id = chunk.id
            state.name = chunk.name if chunk.name is not None else state.name
            state.parts.append(chunk.arguments_delta)
    for index, state in open_blocks.items():
        if index not in ended and (partial := state.block()) is not None:
            ended[index] = partial
    fields: dict[str, object] = {
        "role": "assistant",
        "content": [ended[index] for index in sorted(ended)],
        "source": source,
    }
    if id is not None:
        fields["id"] = id
    return AssistantMessage.model_validate(fields)
