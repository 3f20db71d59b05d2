"""The model's task list as front ends read it (dsh-tool-todo's names, for a front end that
depends on the agent core only): `standing_plan` of a log, `fold_plan` one event at a time."""

from __future__ import annotations

from dsh_tool_todo import (
    MAX_TODO_CHARS,
    MAX_TODOS,
    TodoItem,
    TodoStatus,
    fold_plan,
    standing_plan,
    todos_of,
)

__all__ = [
    "MAX_TODOS",
    "MAX_TODO_CHARS",
    "TodoItem",
    "TodoStatus",
    "fold_plan",
    "standing_plan",
    "todos_of",
]
