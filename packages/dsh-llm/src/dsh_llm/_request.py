"""What a model is asked (``ModelRequest``) and what a model is (``Model``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from pydantic import Field, JsonValue

from dsh_llm._chunks import StreamChunk
from dsh_llm._messages import Message
from dsh_llm._wire import WireModel

__all__ = ["Model", "ModelRequest", "Sampling", "ToolSchema"]


class ToolSchema(WireModel):
    """A tool as the model sees it: ``{"name", "description", "parameters"}`` (a JSON Schema)."""

    name: str = Field(min_length=1)
    description: str
    parameters: dict[str, JsonValue]


class Sampling(WireModel):
    """Sampling controls; ``None`` leaves the provider's default."""

    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, ge=0, le=1)
    stop: list[str] | None = None
    reasoning_effort: str | None = None


class ModelRequest(WireModel):
    """One model call: route, system prompt, history, tools and limits.

    ``messages`` is the full conversation to send (prefix and history); ``tools`` are sent in
    order; ``max_tokens`` caps the answer (``None``: the provider's default).
    """

    provider: str
    model: str
    system: str | None = None
    messages: list[Message] = Field(default_factory=list)
    tools: list[ToolSchema] = Field(default_factory=list)
    sampling: Sampling = Field(default_factory=Sampling)
    max_tokens: int | None = Field(default=None, gt=0)


@runtime_checkable
class Model(Protocol):
    """Anything that can answer a ``ModelRequest`` as a stream of chunks.

    A well-formed stream opens each block with ``block-start``, sends its deltas, closes it with
    ``block-end`` carrying the final block, may send ``usage``, and ends with one ``finish``.
    Cancellation is asyncio's: cancelling the consuming task stops the stream.
    """

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Start the call and yield its chunks."""
        ...
