"""The tool errors: one base, ``ToolError``, and a subclass per failure the registry reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

__all__ = [
    "DuplicateToolError",
    "InvalidToolArgumentsError",
    "InvalidToolDefinitionError",
    "InvalidToolOutputError",
    "ToolAbortedError",
    "ToolDeniedError",
    "ToolError",
    "ToolHookError",
    "UnknownToolError",
]


class ToolError(Exception):
    """Base of every tool error. ``code`` is the stable machine-readable code of the failure.

    A tool body may raise ``ToolError(message, code="MY_CODE")`` to report a failure with its own
    code; the registry turns it into an error result whose info is ``{name, code}``.
    """

    default_code: ClassVar[str] = "TOOL_ERROR"
    info_name: ClassVar[str | None] = None
    """The ``name`` written in the result's error info; ``None`` means the class name."""

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.default_code

    @property
    def error_name(self) -> str:
        """The ``name`` of this error in a result's error info."""
        return self.info_name or type(self).__name__


class DuplicateToolError(ToolError):
    """A tool with this name is already registered; dispose of it first."""

    default_code = "DUPLICATE_TOOL"

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        super().__init__(
            f"a tool named {tool_name!r} is already registered; dispose of that registration "
            "before registering another tool under the same name"
        )


class InvalidToolDefinitionError(ToolError):
    """A definition that cannot be registered (bad name, parameters that are not a model)."""

    default_code = "INVALID_TOOL_DEFINITION"

    def __init__(self, tool_name: str, reason: str) -> None:
        self.tool_name = tool_name
        self.reason = reason
        super().__init__(f"tool {tool_name!r} cannot be registered: {reason}")


class UnknownToolError(ToolError):
    """The model called a tool that is not registered."""

    default_code = "UNKNOWN_TOOL"

    def __init__(self, tool_name: str, available: Sequence[str]) -> None:
        self.tool_name = tool_name
        self.available = tuple(available)
        names = ", ".join(self.available) if self.available else "none"
        super().__init__(f"unknown tool {tool_name!r}; available tools: {names}")


class InvalidToolArgumentsError(ToolError):
    """The call's arguments are not valid JSON or do not match the tool's parameters.

    ``problems`` lists each problem as ``"<field path>: <what is wrong>"``.
    """

    default_code = "INVALID_ARGS"

    def __init__(self, tool_name: str, problems: Sequence[str]) -> None:
        self.tool_name = tool_name
        self.problems = tuple(problems)
        super().__init__(f"Invalid arguments for tool {tool_name}: {'; '.join(self.problems)}")


class ToolDeniedError(ToolError):
    """A pre-execute policy hook denied the call; ``reason`` is what it said."""

    default_code = "DENIED"

    def __init__(self, tool_name: str, reason: str) -> None:
        self.tool_name = tool_name
        self.reason = reason
        super().__init__(reason)


class ToolAbortedError(ToolError):
    """The call was cancelled: in its body (``ABORTED``) or before (``ABORTED_BEFORE_DISPATCH``)."""

    info_name = "AbortError"  # the name format v0 logs carry for aborted calls

    def __init__(self, *, before_dispatch: bool) -> None:
        self.before_dispatch = before_dispatch
        if before_dispatch:
            super().__init__("tool call aborted before dispatch", code="ABORTED_BEFORE_DISPATCH")
        else:
            super().__init__("tool call aborted", code="ABORTED")


class InvalidToolOutputError(ToolError):
    """A tool body returned something that is neither a result nor renderable content."""

    default_code = "INVALID_TOOL_OUTPUT"


class ToolHookError(ToolError):
    """A pre- or post-execute hook raised; the call fails closed."""

    default_code = "HOOK_ERROR"

    def __init__(self, stage: str, error: BaseException) -> None:
        self.stage = stage
        self.error = error
        detail = str(error) or type(error).__name__
        super().__init__(f"{stage} hook failed: {type(error).__name__}: {detail}")
