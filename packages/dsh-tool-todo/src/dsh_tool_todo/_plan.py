"""The task list as data: `TodoItem`, and the folds that read the standing plan from a log."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from dsh_session import SessionEvent

__all__ = [
    "TODO_EVENT_TYPE",
    "TODO_STATUSES",
    "TodoItem",
    "TodoStatus",
    "fold_plan",
    "standing_plan",
    "todos_of",
]

TODO_EVENT_TYPE = "todo/write"
"""The event a call appends: format v0's plugin type, data ``{"todos": [{content, status}]}``."""

TodoStatus = Literal["pending", "in_progress", "completed"]
"""Where a task is: not started, being worked on now, or done."""

TODO_STATUSES: tuple[TodoStatus, ...] = get_args(TodoStatus)
"""Every `TodoStatus`, in the order work moves through them."""


class TodoItem(BaseModel):
    """One task of the list: ``content`` (a short line) and its ``status``. Unknown keys are
    refused, so what is logged is exactly what the model sent."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    content: str
    status: TodoStatus

    def to_wire(self) -> dict[str, Any]:
        """The item as ``todo/write`` stores it: ``{"content", "status"}``, in that order."""
        return {"content": self.content, "status": self.status}


def todos_of(event: SessionEvent) -> list[TodoItem] | None:
    """The list a ``todo/write`` event holds; ``None`` for any other event, and for a
    ``todo/write`` whose data is not a list of ``{content, status}`` items (a log written by
    something else may hold one: it cannot be shown, so it is skipped)."""
    if event.type != TODO_EVENT_TYPE:
        return None
    data = event.data
    if not isinstance(data, Mapping):
        return None
    todos = data.get("todos")
    if not isinstance(todos, list | tuple):
        return None
    if not all(isinstance(item, Mapping) for item in todos):
        return None
    try:
        return [TodoItem.model_validate(dict(item)) for item in todos]
    except ValidationError:
        return None


def fold_plan(plan: list[TodoItem] | None, event: SessionEvent) -> list[TodoItem] | None:
    """One step of the standing-plan fold: a ``todo/write`` replaces the plan with its list, a
    ``turn/start`` clears it (``None``), any other event leaves it as it is. A ``turn/end``
    keeps it: the finished list stays while the answer is read, until the next turn starts."""
    if event.type == TODO_EVENT_TYPE:
        written = todos_of(event)
        return plan if written is None else written
    if event.type == "turn/start":
        return None
    return plan


def standing_plan(events: Iterable[SessionEvent]) -> list[TodoItem] | None:
    """The plan a display shows for a log: the list of the latest ``todo/write`` that no later
    ``turn/start`` follows; ``None`` when there is none (never written, or a turn started
    since). An empty list is a plan the model emptied."""
    plan: list[TodoItem] | None = None
    for event in events:
        plan = fold_plan(plan, event)
    return plan
