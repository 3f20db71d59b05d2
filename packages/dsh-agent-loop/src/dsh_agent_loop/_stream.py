"""One model call: its chunks logged as they arrive, folded into the answer or a failure."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from dsh_llm import AssistantMessage as _AssistantMessage
from dsh_llm import (
    BlockEndChunk,
    BlockStartChunk,
    FailureCode,
    FinishChunk,
    FinishReason,
    LlmFailure,
    Model,
    ModelRequest,
    ModelSource,
    ReasoningBlock,
    ReasoningDeltaChunk,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    ToolCallDeltaChunk,
    UsageChunk,
    assemble_message,
)
from dsh_session import Session

__all__ = ["Attempt", "stream_attempt"]

_CHUNK_TYPES = (
    BlockStartChunk,
    TextDeltaChunk,
    ReasoningDeltaChunk,
    ToolCallDeltaChunk,
    BlockEndChunk,
    UsageChunk,
    FinishChunk,
)


@dataclass(slots=True)
class Attempt:
    """What one model call produced so far: its chunks and their seqs, and how it ended."""

    turn: int
    step: int
    source: ModelSource
    chunks: list[StreamChunk] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    finish: FinishChunk | None = None
    usage: UsageChunk | None = None

    @property
    def failure(self) -> LlmFailure | None:
        """The failure the call ended with (``error`` or ``aborted`` finish), if it failed."""
        if self.finish is None or self.finish.reason.kind not in ("error", "aborted"):
            return None
        error = self.finish.reason.error
        if error is not None:
            return error
        return LlmFailure(message="the model aborted the answer", code=FailureCode.ABORTED)

    def message(self) -> _AssistantMessage:
        """The assistant message the chunks describe."""
        source = self.source
        if self.finish is not None and self.finish.replay_state is not None:
            source = ModelSource(
                provider=source.provider, model=source.model, replay_state=self.finish.replay_state
            )
        return assemble_message(self.chunks, source)

    def provenance(self, message: _AssistantMessage) -> dict[str, Any]:
        """``{provider, model, replayState?}`` as ``assistant/message`` logs it."""
        wire = message.source.to_wire()
        wire.pop("kind", None)
        return wire

    def interrupted_content(self) -> list[dict[str, Any]]:
        """The text and reasoning that had arrived when the call was cut off (tool calls, even
        complete ones, are dropped: they never ran)."""
        blocks = self.message().content
        return [
            block.to_wire()
            for block in blocks
            if isinstance(block, TextBlock | ReasoningBlock) and block.text
        ]


def _terminal(failure: LlmFailure) -> FinishChunk:
    return FinishChunk(reason=FinishReason(kind="error", error=failure))


def _ended_without_finish(attempt: Attempt) -> LlmFailure:
    if any(isinstance(chunk, TextDeltaChunk | ReasoningDeltaChunk) for chunk in attempt.chunks):
        return LlmFailure(
            message="the model stream ended before its finish chunk", code=FailureCode.STREAM_CLOSED
        )
    return LlmFailure(
        message="the model stream ended without an answer", code=FailureCode.EMPTY_RESPONSE
    )


async def stream_attempt(
    session: Session, model: Model, request: ModelRequest, attempt: Attempt
) -> None:
    """Stream ``request`` from ``model`` into ``attempt``, logging each chunk as
    ``assistant/chunk``.

    Every call ends with a finish chunk in the log: a model that raises, yields something that
    is not a chunk, or stops without a finish gets a synthetic ``finish{error}`` (codes
    ``UNKNOWN``, ``BAD_CHUNK``, ``STREAM_CLOSED``, ``EMPTY_RESPONSE``). Cancellation propagates
    (``attempt`` keeps what arrived) and closes the model's stream.
    """
    data_turn = attempt.turn
    data_step = attempt.step
    append = session.append
    stream = model.stream(request)
    failure: LlmFailure | None = None
    try:
        async for item in stream:
            chunk: Any = item  # a model is untrusted: check what it really yields
            if not isinstance(chunk, _CHUNK_TYPES):
                failure = LlmFailure(
                    message=f"the model yielded {type(chunk).__name__}, not a stream chunk",
                    code=FailureCode.BAD_CHUNK,
                )
                break
            event = append(
                "assistant/chunk",
                {"turn": data_turn, "step": data_step, "chunk": chunk.to_wire()},
            )
            attempt.seqs.append(event.seq)
            attempt.chunks.append(chunk)
            if isinstance(chunk, UsageChunk):
                attempt.usage = chunk
            elif isinstance(chunk, FinishChunk):
                attempt.finish = chunk
                break
    except Exception as error:  # an adapter that raises: normalized, never raised past the loop
        failure = LlmFailure(message=f"{type(error).__name__}: {error}", code=FailureCode.UNKNOWN)
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):  # a model failing to close changes no outcome
                await close()
    if attempt.finish is None:
        finish = _terminal(failure if failure is not None else _ended_without_finish(attempt))
        event = append(
            "assistant/chunk", {"turn": data_turn, "step": data_step, "chunk": finish.to_wire()}
        )
        attempt.seqs.append(event.seq)
        attempt.chunks.append(finish)
        attempt.finish = finish
