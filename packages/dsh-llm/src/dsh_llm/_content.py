"""Content blocks: the parts a message is made of."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from dsh_llm._wire import WireModel

__all__ = [
    "AssistantContentBlock",
    "ContentBlock",
    "ImageBlock",
    "ReasoningBlock",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "ToolResultContentBlock",
    "UserContentBlock",
]


class _Block(WireModel):
    _always_written: ClassVar[tuple[str, ...]] = ("type",)


class TextBlock(_Block):
    """Plain text: ``{"type": "text", "text": ...}``."""

    type: Literal["text"] = "text"
    text: str


class ReasoningBlock(_Block):
    """The model's reasoning text: ``{"type": "reasoning", "text": ...}``."""

    type: Literal["reasoning"] = "reasoning"
    text: str


class ImageBlock(_Block):
    """An inline image: base64 ``data`` with its ``mimeType`` (for example ``image/png``)."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ToolCallBlock(_Block):
    """A tool call the model made: ``{"type": "tool-call", "id", "name", "arguments"}``.

    ``arguments`` is the raw JSON text exactly as the model produced it; parsing it is the tool
    registry's job, so a malformed call is still recorded as the model sent it.
    """

    type: Literal["tool-call"] = "tool-call"
    id: str
    name: str
    arguments: str


ToolResultContentBlock = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]
"""What a tool result may carry: text and images."""


class ToolResultBlock(_Block):
    """The outcome of one tool call: ``{"type": "tool-result", "toolCallId", "content", "isError"}``
    (``isError`` may be absent).

    ``is_error`` defaults to false: an absent ``isError`` on the wire means success.
    """

    type: Literal["tool-result"] = "tool-result"
    tool_call_id: str
    content: list[ToolResultContentBlock]
    is_error: bool = False


UserContentBlock = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]
"""What a user message may carry: text and images."""

AssistantContentBlock = Annotated[
    TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock, Field(discriminator="type")
]
"""What an assistant message (and a ``block-end`` chunk) may carry."""

ContentBlock = Annotated[
    TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock | ToolResultBlock,
    Field(discriminator="type"),
]
"""Any content block, discriminated on ``type``."""
