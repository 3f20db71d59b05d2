"""The model's task list as the editor's plan: each ``todo/write`` becomes an ACP ``plan``
update, live and on ``session/load``.

An ACP plan replaces the editor's whole plan with each update, as ``todo/write`` replaces the
whole list, so every write is sent as it is: each entry's ``content`` and ``status`` (the same
three statuses on both sides) and `PLAN_PRIORITY` (dsh's items carry none; ACP requires one).
The plan lasts as the standing plan does (dsh-tool-todo's ``standing_plan``): a ``turn/start``
after a shown plan sends an empty plan, which clears it, and a replay sends only the plan still
standing at the end of the log."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from acp import plan_entry, update_plan
from acp.schema import AgentPlanUpdate, PlanEntryPriority

from dsh_agent_core import MAX_TODO_CHARS, MAX_TODOS, TodoItem, fold_plan
from dsh_session import SessionEvent

__all__ = ["PLAN_ENTRIES", "PLAN_ENTRY_CHARS", "PLAN_PRIORITY", "PlanUpdates", "plan_update"]

PLAN_ENTRIES = MAX_TODOS
"""The most entries a plan update sends: the most a ``todo_write`` list holds (a log written
elsewhere may hold a longer one)."""

PLAN_ENTRY_CHARS = MAX_TODO_CHARS
"""The most characters of one entry's content sent (cut with an ellipsis): the most a task
holds."""

PLAN_PRIORITY: PlanEntryPriority = "medium"
"""The priority of every plan entry: dsh's task list has no priorities, ACP's entries need one."""


def plan_update(todos: Sequence[TodoItem]) -> AgentPlanUpdate:
    """The ``plan`` update that shows ``todos`` (an empty list clears the editor's plan): at
    most `PLAN_ENTRIES` entries of at most `PLAN_ENTRY_CHARS` characters, whatever the log
    holds (the tool itself refuses longer lists; a log written elsewhere may not)."""
    return update_plan(
        plan_entry(_bounded(item.content), priority=PLAN_PRIORITY, status=item.status)
        for item in list(todos)[:PLAN_ENTRIES]
    )


def _bounded(content: str) -> str:
    if len(content) <= PLAN_ENTRY_CHARS:
        return content
    return content[: PLAN_ENTRY_CHARS - 1] + "…"


class PlanUpdates:
    """One session's plan as updates: `live` per event while turns run, `replay` for a log."""

    def __init__(self) -> None:
        self._plan: list[TodoItem] | None = None

    def live(self, event: SessionEvent) -> list[AgentPlanUpdate]:
        """A ``todo/write``'s list as a plan; a ``turn/start`` that ends a shown plan as an
        empty one; nothing for other events (or a ``todo/write`` of another shape)."""
        before = self._plan
        self._plan = fold_plan(before, event)
        if self._plan is before:
            return []
        return [plan_update(self._plan or [])]

    def replay(self, events: Iterable[SessionEvent]) -> list[AgentPlanUpdate]:
        """The plan still standing at the end of ``events`` (nothing when none stands)."""
        plan: list[TodoItem] | None = None
        for event in events:
            plan = fold_plan(plan, event)
        self._plan = plan
        return [] if plan is None else [plan_update(plan)]
