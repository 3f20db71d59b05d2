"""The model-facing ``todo_write`` tool of DSH: the calling agent's task list.

- `TodoWriteTool` (``todo_write``): the model sends its whole list of ``{content, status}``
  items (`TodoItem`; status `TodoStatus`: ``pending``, ``in_progress``, ``completed``); the
  list is checked (`canonical_todos`: content trimmed, none empty, none repeated, at most
  `MAX_TODOS` tasks of at most `MAX_TODO_CHARS` characters, at most one in progress unless
  ``allow_parallel_in_progress``), appended to the calling agent's session
  as ``todo/write {"todos": [...]}`` (format v0's plugin event, never on the model's surface)
  and answered with its counts. Refusals are error results the model reads:
  `InvalidTodosError` (``INVALID_TODOS``), `NoOwningSessionError` (``NO_OWNING_SESSION``).
- `standing_plan(events)`: what a display shows, the latest list not followed by a
  ``turn/start`` (`fold_plan` is one step of it, `todos_of` reads one event).
"""

from dsh_tool_todo._plan import (
    TODO_EVENT_TYPE,
    TODO_STATUSES,
    TodoItem,
    TodoStatus,
    fold_plan,
    standing_plan,
    todos_of,
)
from dsh_tool_todo._tool import (
    MAX_TODO_CHARS,
    MAX_TODOS,
    TOOL_NAME,
    InvalidTodosError,
    NoOwningSessionError,
    TodoWriteArgs,
    TodoWriteTool,
    canonical_todos,
)

__all__ = [
    "MAX_TODOS",
    "MAX_TODO_CHARS",
    "TODO_EVENT_TYPE",
    "TODO_STATUSES",
    "TOOL_NAME",
    "InvalidTodosError",
    "NoOwningSessionError",
    "TodoItem",
    "TodoStatus",
    "TodoWriteArgs",
    "TodoWriteTool",
    "canonical_todos",
    "fold_plan",
    "standing_plan",
    "todos_of",
]
