"""Content blocks: the parts a message is made of."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from dsh_llm._wire import WireModel

__all__ = [
    "AssistantContentBlock",
    "ContentBlock",
    "ImageAttachment",
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


class ImageAttachment(WireModel):
    """A stored image an image block refers to instead of carrying its bytes:
    ``{"attachmentId", "mediaType", "bytes", "width", "height", "name"?}``.

    ``attachment_id`` is the store's opaque id (the TypeScript harness writes
    ``sha256:<hex>``), ``media_type`` the verified type (``image/png``, ``image/jpeg``,
    ``image/webp``, ``image/gif``), ``bytes`` the encoded length, ``width``/``height`` the
    intrinsic size in pixels and ``name`` an optional display name. The bytes live in the
    attachment store, not in the log.
    """

    attachment_id: str
    media_type: str
    bytes: int = Field(ge=0)
    width: int = Field(ge=0)
    height: int = Field(ge=0)
    name: str | None = None


class ImageBlock(_Block):
    """An image, in one of two forms: inline, ``{"type": "image", "data", "mimeType"}`` (base64
    ``data`` with its media type), or stored, ``{"type": "image", "attachment": {...}}`` (an
    :class:`ImageAttachment`). Exactly one form is allowed; :attr:`is_inline` tells which.
    """

    type: Literal["image"] = "image"
    data: str | None = None
    mime_type: str | None = None
    attachment: ImageAttachment | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ImageBlock:
        inline = (self.data is not None, self.mime_type is not None)
        if self.attachment is None:
            if inline != (True, True):
                missing = "data" if self.data is None else "mimeType"
                raise ValueError(
                    f"an inline image block needs both data and mimeType ({missing} is missing), "
                    "or an attachment instead of both"
                )
        elif inline != (False, False):
            raise ValueError(
                "an image block carries either data and mimeType or an attachment, not both"
            )
        return self

    @property
    def is_inline(self) -> bool:
        """Whether the bytes are inline (``data``/``mimeType``) rather than an attachment."""
        return self.attachment is None

    @property
    def media_type(self) -> str:
        """The image's media type in either form (``mimeType`` or ``attachment.mediaType``)."""
        if self.attachment is not None:
            return self.attachment.media_type
        assert self.mime_type is not None  # the validator guarantees one complete form
        return self.mime_type


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
