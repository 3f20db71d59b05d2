"""`TodoWriteTool`: the model's task list, replaced whole on each call and logged as
``todo/write`` in the calling agent's session."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, JsonValue

from dsh_llm import ToolSchema
from dsh_tool_todo._plan import TODO_EVENT_TYPE, TODO_STATUSES, TodoItem
from dsh_tools import ToolDefinition, ToolError, ToolExecution, ToolResult

__all__ = [
    "MAX_TODOS",
    "MAX_TODO_CHARS",
    "TOOL_NAME",
    "InvalidTodosError",
    "NoOwningSessionError",
    "TodoWriteArgs",
    "TodoWriteTool",
    "canonical_todos",
]

MAX_TODOS = 100
"""The most tasks one list may hold (a longer list is refused; nothing is logged)."""

MAX_TODO_CHARS = 1000
"""The most characters one task's content may hold once trimmed."""

_BLANK = re.compile(r"^[\s\ufeff]+|[\s\ufeff]+$")
"""What trimming removes at either end: whitespace and U+FEFF, as JavaScript's ``trim()`` does
(the TypeScript harness's reader refuses content that its ``trim()`` would change)."""

TOOL_NAME = "todo_write"
"""The name the model calls the tool by."""

_HEAD = (
    "Track multi-step work as a task list the user sees. Send the WHOLE list each call; it "
    "replaces the last one. Before starting, add one short step per item; mark each completed "
    "as soon as it is done. "
)
_SINGLE = "Keep exactly one item in_progress while work remains. "
_PARALLEL = (
    "Mark in_progress what you are working on now (several only for work running in parallel: "
    "background jobs, subagents). "
)
_TAIL = "Skip it for one-step tasks."


class TodoWriteArgs(BaseModel):
    """The call's parameters: ``todos``, the complete list in order."""

    model_config = ConfigDict(extra="forbid")

    todos: list[TodoItem]


class InvalidTodosError(ToolError):
    """A list the tool refuses: an item without content, two items with the same content, or
    more items in progress than the tool allows. Nothing is logged."""

    default_code = "INVALID_TODOS"


class NoOwningSessionError(ToolError):
    """The call has no calling agent, so there is no session whose list it would be."""

    default_code = "NO_OWNING_SESSION"

    def __init__(self) -> None:
        super().__init__(
            f"{TOOL_NAME} keeps the calling agent's task list in its session, and this call "
            "has no calling agent"
        )


def canonical_todos(
    todos: Sequence[TodoItem], *, allow_parallel_in_progress: bool
) -> list[TodoItem]:
    """``todos`` as they are logged: each content trimmed (whitespace and U+FEFF). Raises
    `InvalidTodosError` naming the item for content that is empty once trimmed, over
    `MAX_TODO_CHARS`, or repeats an earlier item's; for a list over `MAX_TODOS`; and, unless
    ``allow_parallel_in_progress``, for more than one item ``in_progress``."""
    if len(todos) > MAX_TODOS:
        raise InvalidTodosError(
            f"{len(todos)} tasks were given; a list holds at most {MAX_TODOS}: merge or drop some"
        )
    canonical: list[TodoItem] = []
    seen: set[str] = set()
    for index, item in enumerate(todos):
        content = _BLANK.sub("", item.content)
        if len(content) > MAX_TODO_CHARS:
            raise InvalidTodosError(
                f"todos[{index}].content is {len(content)} characters; a task holds at most "
                f"{MAX_TODO_CHARS}: say it in one line"
            )
        if not content:
            raise InvalidTodosError(f"todos[{index}].content is empty; give every task a line")
        if content in seen:
            raise InvalidTodosError(
                f"todos[{index}].content {content!r} repeats an earlier task; every task needs "
                "its own content"
            )
        seen.add(content)
        canonical.append(TodoItem(content=content, status=item.status))
    active = [item.content for item in canonical if item.status == "in_progress"]
    if len(active) > 1 and not allow_parallel_in_progress:
        names = ", ".join(repr(content) for content in active)
        raise InvalidTodosError(
            f"{len(active)} tasks are in_progress ({names}); at most one may be, mark the "
            "others pending or completed"
        )
    return canonical


def _summary(todos: Sequence[TodoItem]) -> str:
    counts = dict.fromkeys(TODO_STATUSES, 0)
    for item in todos:
        counts[item.status] += 1
    noun = "task" if len(todos) == 1 else "tasks"
    return (
        f"Task list updated: {len(todos)} {noun} ({counts['completed']} completed, "
        f"{counts['in_progress']} in progress, {counts['pending']} pending)."
    )


class TodoWriteTool(ToolDefinition[TodoWriteArgs]):
    """``todo_write({todos: [{content, status}]})``: the calling agent's whole task list.

    Each call validates the list (`canonical_todos`), appends one ``todo/write`` event with
    ``{"todos": [...]}`` to the calling agent's session (``execution.caller.session``) while the
    call runs, and answers with the counts per status. A refused list is an error result the
    model reads (`InvalidTodosError`, ``INVALID_TODOS``); a call without a calling agent is
    refused (`NoOwningSessionError`). The event is not a surface event: the model's history
    holds only its call and the result; displays read the event (see `standing_plan`).

    ``allow_parallel_in_progress`` is the deployment's choice, made explicitly: ``True``
    accepts several items ``in_progress`` (work that runs in parallel), ``False`` at most one.
    The description tells the model the same rule the tool enforces.
    """

    name = TOOL_NAME
    parameters = TodoWriteArgs

    def __init__(self, *, allow_parallel_in_progress: bool) -> None:
        self.allow_parallel_in_progress = allow_parallel_in_progress
        self.description = _HEAD + (_PARALLEL if allow_parallel_in_progress else _SINGLE) + _TAIL

    def schema(self) -> ToolSchema:
        """The model-facing schema: one required ``todos`` array of ``{content, status}``
        objects (no other keys), written out so it carries no titles or references."""
        item: dict[str, JsonValue] = {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "A short imperative line."},
                "status": {"type": "string", "enum": list(TODO_STATUSES)},
            },
            "required": ["content", "status"],
            "additionalProperties": False,
        }
        parameters: dict[str, JsonValue] = {
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete list, in order.",
                    "items": item,
                }
            },
            "required": ["todos"],
            "additionalProperties": False,
        }
        return ToolSchema(name=self.name, description=self.description, parameters=parameters)

    async def execute(self, args: TodoWriteArgs, execution: ToolExecution) -> ToolResult:
        """Validate, log ``todo/write`` in the caller's session, answer with the counts."""
        todos = canonical_todos(
            args.todos, allow_parallel_in_progress=self.allow_parallel_in_progress
        )
        caller = execution.caller
        if caller is None:
            raise NoOwningSessionError()
        caller.session.append(TODO_EVENT_TYPE, {"todos": [item.to_wire() for item in todos]})
        return ToolResult.ok(_summary(todos))
