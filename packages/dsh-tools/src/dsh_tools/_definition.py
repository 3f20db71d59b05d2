"""ToolDefinition: a tool's schema, its body, and how its output becomes content."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Generic, TypeVar

from pydantic import BaseModel

from dsh_llm import ImageBlock, TextBlock, ToolResultContentBlock, ToolSchema
from dsh_tools._errors import InvalidToolOutputError
from dsh_tools._execution import ToolExecution
from dsh_tools._result import ToolContent, ToolResult

__all__ = ["ArgsT", "ToolDefinition"]

ArgsT = TypeVar("ArgsT", bound=BaseModel)
"""The pydantic model of a tool's parameters."""


class ToolDefinition(ABC, Generic[ArgsT]):
    """A tool: name, description, a pydantic parameters model, and an async body.

    Subclass it, set ``name``, ``description`` and ``parameters`` (class attributes or instance
    attributes set in ``__init__``), and implement ``execute``::

        class Echo(ToolDefinition[EchoArgs]):
            name = "echo"
            description = "Repeat the text."
            parameters = EchoArgs

            async def execute(self, args: EchoArgs, execution: ToolExecution) -> ToolContent:
                return args.text

    The registry validates the model's arguments against ``parameters`` before the body runs.
    The body returns a ``ToolResult`` (used as is) or content (text or blocks), which
    ``render`` turns into the result's content blocks. A body that raises produces an error
    result (see ``ToolRegistry.execute``).
    """

    name: str
    """The name the model calls the tool by (letters, digits, ``_`` and ``-``; at most 64)."""
    description: str
    """What the tool does, for the model."""
    parameters: type[ArgsT]
    """The pydantic model the call's arguments must validate against."""

    def schema(self) -> ToolSchema:
        """The part sent to the model: name, description and the parameters' JSON Schema."""
        return ToolSchema(
            name=self.name,
            description=self.description,
            parameters=self.parameters.model_json_schema(by_alias=True),
        )

    @abstractmethod
    async def execute(self, args: ArgsT, execution: ToolExecution) -> ToolResult | ToolContent:
        """Run the tool with validated ``args``."""

    def render(self, args: ArgsT, output: ToolContent) -> list[ToolResultContentBlock]:
        """Turn what ``execute`` returned into content blocks (text becomes one text block).

        Override to shape output (truncate, format); raise ``InvalidToolOutputError`` for output
        that cannot be shown.
        """
        if isinstance(output, str):
            return [TextBlock(text=output)]
        if isinstance(output, Sequence):
            blocks = [block for block in output if isinstance(block, TextBlock | ImageBlock)]
            if len(blocks) == len(output):
                return blocks
        raise InvalidToolOutputError(
            f"tool {self.name} returned {type(output).__name__}, which is neither a ToolResult "
            "nor text nor a sequence of text/image blocks"
        )

    def approval_reason(self, args: ArgsT, execution: ToolExecution) -> str | None:
        """Why this call must be approved before it runs, or ``None`` (the default) when it
        need not be. A reason makes the registry ask its approver, as a hook's ``Ask`` does.
        Raising refuses the call as the body's errors do (a ``ToolError`` keeps its code)."""
        return None

    def is_concurrency_safe(self, args: ArgsT) -> bool:
        """Whether this call may run alongside others. Default: no (the call runs alone)."""
        return False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} tool {getattr(self, 'name', '?')!r}>"
