"""Messages: user, assistant and tool-result, as format v0 writes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from dsh_llm._content import (
    AssistantContentBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    UserContentBlock,
)
from dsh_llm._source import (
    ModelSource,
    OtherSource,
    PluginSource,
    ToolSource,
    UserMessageSource,
    UserSource,
)
from dsh_llm._wire import WireModel

__all__ = ["AssistantMessage", "Message", "ToolResultMessage", "UserMessage"]

# Field declaration order follows the key order the v0 writer most often used for each message
# kind. Only the key *set* is promised to round-trip: v0 wrote user messages in two orders
# (``messagePrefix`` puts ``role`` first), so byte-exact re-encoding is the session codec's job.


class UserMessage(WireModel):
    """A user turn: ``{"content", "source", "role"?: "user", "id"?}``.

    ``source`` is the user, a plugin (injected context), or an :class:`OtherSource` of any other
    kind a plugin names (``goal``, ``coordinator``, ...). ``role`` and ``id`` are written only
    when given: v0 ``user/message`` data carries neither, newer writers carry both.
    """

    content: list[UserContentBlock]
    source: UserMessageSource
    role: Literal["user"] = "user"
    id: str | None = None

    @classmethod
    def from_text(
        cls,
        text: str,
        *,
        source: UserSource | PluginSource | OtherSource | None = None,
        id: str | None = None,
    ) -> UserMessage:
        """A one-text-block message, from the user unless ``source`` says otherwise."""
        fields: dict[str, Any] = {
            "content": [TextBlock(text=text)],
            "source": source if source is not None else UserSource(),
            "role": "user",
        }
        if id is not None:
            fields["id"] = id
        return cls(**fields)


class AssistantMessage(WireModel):
    """A model turn: ``{"role"?: "assistant", "content", "source": {"kind": "model", ...}, "id"?}``.

    ``role`` and ``id`` are written only when given (``assemble_message`` gives ``role``).
    """

    role: Literal["assistant"] = "assistant"
    content: list[AssistantContentBlock]
    source: ModelSource
    id: str | None = None

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        """The tool-call blocks, in content order."""
        return [block for block in self.content if isinstance(block, ToolCallBlock)]

    @property
    def text(self) -> str:
        """All text blocks joined (reasoning excluded)."""
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))


class ToolResultMessage(WireModel):
    """The answer to one tool call: ``{"source": {"kind": "tool", "callId"}, "content", ...}``.

    In format v0 its role is ``user`` and its content is exactly one ``tool-result`` block whose
    ``toolCallId`` equals the source's ``callId``; both rules are checked.
    """

    source: ToolSource
    content: list[ToolResultBlock] = Field(min_length=1, max_length=1)
    role: Literal["user"] = "user"
    id: str | None = None

    @model_validator(mode="after")
    def _call_ids_agree(self) -> ToolResultMessage:
        block = self.content[0]
        if block.tool_call_id != self.source.call_id:
            raise ValueError(
                f"tool-result block answers {block.tool_call_id!r} but the message source "
                f"names call {self.source.call_id!r}"
            )
        return self

    @property
    def result(self) -> ToolResultBlock:
        """The one tool-result block."""
        return self.content[0]


def _message_kind(value: Any) -> str | None:
    """Tell the three message kinds apart: role, then the source's kind."""
    if isinstance(value, WireModel):
        return {
            UserMessage: "user",
            AssistantMessage: "assistant",
            ToolResultMessage: "tool-result",
        }.get(type(value))
    if not isinstance(value, Mapping):
        return None
    if value.get("role") == "assistant":
        return "assistant"
    source = value.get("source")
    kind = source.get("kind") if isinstance(source, Mapping) else getattr(source, "kind", None)
    if kind == "model" and "role" not in value:
        return "assistant"
    if value.get("role", "user") != "user":
        return None
    return "tool-result" if kind == "tool" else "user"


Message = Annotated[
    Annotated[UserMessage, Tag("user")]
    | Annotated[AssistantMessage, Tag("assistant")]
    | Annotated[ToolResultMessage, Tag("tool-result")],
    Discriminator(
        _message_kind,
        custom_error_type="invalid_message",
        custom_error_message="not a message: needs role 'user' or 'assistant' and a source",
    ),
]
"""Any message. ``role: "assistant"`` (or a model source) is an assistant message; a ``user``
message whose source is a tool is a tool-result message; every other ``user`` is a user message."""
