"""ToolResult: what a tool call produced, and the part of it the session log keeps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, JsonValue

from dsh_llm import (
    TextBlock,
    ToolResultBlock,
    ToolResultContentBlock,
    ToolResultMessage,
    ToolSource,
    WireModel,
)
from dsh_tools._errors import ToolError

__all__ = ["ToolContent", "ToolErrorInfo", "ToolResult"]

ToolContent = str | Sequence[ToolResultContentBlock]
"""Content a tool body may return instead of a full ``ToolResult``: text or content blocks."""


class ToolErrorInfo(WireModel):
    """Why a call failed, as the log stores it: ``{"name", "code"}`` (for example
    ``{"name": "InvalidToolArgumentsError", "code": "INVALID_ARGS"}``)."""

    name: str
    code: str


class ToolResult(WireModel):
    """The outcome of one tool call.

    ``content`` is what the model sees; ``is_error`` marks a failure, and ``error`` says which
    (``None`` when a tool reports a failure without a code). ``meta`` is JSON for the operator and
    the UI, never sent to the model.
    """

    content: list[ToolResultContentBlock] = Field(default_factory=list)
    is_error: bool = False
    error: ToolErrorInfo | None = None
    meta: JsonValue = None

    @classmethod
    def ok(cls, content: ToolContent, *, meta: JsonValue = None) -> ToolResult:
        """A successful result from text or content blocks."""
        return cls(content=_blocks(content), meta=meta)

    @classmethod
    def failure(
        cls, message: str, *, code: str, name: str = "ToolError", meta: JsonValue = None
    ) -> ToolResult:
        """An error result whose content is the one text block ``Error: <message>``."""
        return cls(
            content=[TextBlock(text=f"Error: {message}")],
            is_error=True,
            error=ToolErrorInfo(name=name, code=code),
            meta=meta,
        )

    @classmethod
    def from_exception(cls, error: BaseException) -> ToolResult:
        """The error result for an exception a call raised.

        A ``ToolError`` keeps its own code and name; anything else has code ``TOOL_ERROR`` and
        the exception's class name. The text is ``Error: <message>`` (the class name when the
        exception has no message).
        """
        if isinstance(error, ToolError):
            return cls.failure(error.message, code=error.code, name=error.error_name)
        message = str(error) or type(error).__name__
        return cls.failure(message, code="TOOL_ERROR", name=type(error).__name__)

    @property
    def text(self) -> str:
        """The text blocks joined."""
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))

    def to_durable(self) -> dict[str, Any]:
        """What a ``tool/result`` event stores: ``{"content", "isError", "error"?, "meta"?}``."""
        durable: dict[str, Any] = {
            "content": [block.to_wire() for block in self.content],
            "isError": self.is_error,
        }
        if self.error is not None:
            durable["error"] = self.error.to_wire()
        if self.meta is not None:
            durable["meta"] = self.meta
        return durable

    def to_message(self, call_id: str, *, id: str | None = None) -> ToolResultMessage:
        """This result as the tool-result message that answers call ``call_id``."""
        fields: dict[str, Any] = {
            "source": ToolSource(call_id=call_id),
            "content": [
                ToolResultBlock(
                    tool_call_id=call_id, content=list(self.content), is_error=self.is_error
                )
            ],
            "role": "user",
        }
        if id is not None:
            fields["id"] = id
        return ToolResultMessage.model_validate(fields)


def _blocks(content: ToolContent) -> list[ToolResultContentBlock]:
    if isinstance(content, str):
        return [TextBlock(text=content)]
    return list(content)
