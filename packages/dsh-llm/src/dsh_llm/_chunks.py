"""Stream chunks: what a model emits while it answers, discriminated on ``type``."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, JsonValue, model_validator

from dsh_llm._content import AssistantContentBlock
from dsh_llm._usage import LlmFailure, Usage
from dsh_llm._wire import WireModel

__all__ = [
    "BlockEndChunk",
    "BlockStartChunk",
    "BlockType",
    "FinishChunk",
    "FinishKind",
    "FinishReason",
    "ReasoningDeltaChunk",
    "StreamChunk",
    "TextDeltaChunk",
    "ToolCallDeltaChunk",
    "UsageChunk",
]

BlockType = Literal["text", "reasoning", "image", "tool-call"]
"""The kinds of block a model streams."""

FinishKind = Literal["stop", "tool-calls", "max-tokens", "aborted", "error"]
"""Why a stream ended."""

_Index = Annotated[int, Field(ge=0)]


class _Chunk(WireModel):
    _always_written: ClassVar[tuple[str, ...]] = ("type",)


class BlockStartChunk(_Chunk):
    """Block ``index`` of kind ``block_type`` begins."""

    type: Literal["block-start"] = "block-start"
    index: _Index
    block_type: BlockType


class TextDeltaChunk(_Chunk):
    """More text for text block ``index``."""

    type: Literal["text-delta"] = "text-delta"
    index: _Index
    text: str


class ReasoningDeltaChunk(_Chunk):
    """More reasoning for reasoning block ``index``."""

    type: Literal["reasoning-delta"] = "reasoning-delta"
    index: _Index
    text: str


class ToolCallDeltaChunk(_Chunk):
    """More argument text for tool-call block ``index`` (call ``id``; ``name`` when known)."""

    type: Literal["tool-call-delta"] = "tool-call-delta"
    index: _Index
    id: str
    name: str | None = None
    arguments_delta: str


class BlockEndChunk(_Chunk):
    """Block ``index`` is complete; ``block`` is its final form."""

    type: Literal["block-end"] = "block-end"
    index: _Index
    block: AssistantContentBlock


class UsageChunk(_Chunk):
    """The call's token usage."""

    type: Literal["usage"] = "usage"
    usage: Usage


class FinishReason(WireModel):
    """``{"kind": ...}``, with ``error`` (an ``LlmFailure``) required for ``error`` and allowed for
    ``aborted``."""

    kind: FinishKind
    error: LlmFailure | None = None

    @model_validator(mode="after")
    def _error_matches_kind(self) -> FinishReason:
        if self.kind == "error" and self.error is None:
            raise ValueError("a finish reason of kind 'error' needs an error")
        if self.kind not in ("error", "aborted") and self.error is not None:
            raise ValueError(f"a finish reason of kind {self.kind!r} carries no error")
        return self


class FinishChunk(_Chunk):
    """The last chunk of a stream: why it ended (and opaque provider ``replay_state``)."""

    type: Literal["finish"] = "finish"
    reason: FinishReason
    replay_state: JsonValue = None


StreamChunk = Annotated[
    BlockStartChunk
    | TextDeltaChunk
    | ReasoningDeltaChunk
    | ToolCallDeltaChunk
    | BlockEndChunk
    | UsageChunk
    | FinishChunk,
    Field(discriminator="type"),
]
"""Any stream chunk, discriminated on ``type``."""
