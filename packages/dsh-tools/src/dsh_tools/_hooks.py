"""Policy decisions and the shapes of pre- and post-execute hooks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from dsh_tools._execution import ToolExecution
from dsh_tools._result import ToolResult

__all__ = [
    "ALLOW",
    "Allow",
    "Approver",
    "Ask",
    "Deny",
    "PolicyDecision",
    "PostExecuteHook",
    "PreExecuteHook",
]


@dataclass(frozen=True, slots=True)
class Allow:
    """Let the call run (returning ``None`` from a pre-execute hook means the same)."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Refuse the call; the model sees ``Error: <reason>`` and the result's code is ``DENIED``."""

    reason: str


@dataclass(frozen=True, slots=True)
class Ask:
    """Run the call only if the approver grants it (``reason`` is shown to whoever answers).

    A later hook's ``Deny`` still refuses the call; without an approver the call is denied.
    """

    reason: str | None = None


ALLOW = Allow()
"""The one ``Allow`` decision."""

PolicyDecision = Allow | Deny | Ask
"""What a pre-execute hook decides."""

PreExecuteHook = Callable[[ToolExecution], PolicyDecision | Awaitable[PolicyDecision | None] | None]
"""Called before the body, sync or async; the first ``Deny`` refuses the call, an ``Ask``
makes it wait for the approver."""

Approver = Callable[[ToolExecution, "str | None"], Awaitable[Allow | Deny]]
"""Answers a call that needs approval: ``(execution, reason) -> Allow or Deny(reason)``.

Whoever runs the registry (the agent loop) supplies it; it asks, audits and maps the answer.
"""

PostExecuteHook = Callable[
    [ToolExecution, ToolResult], ToolResult | Awaitable[ToolResult | None] | None
]
"""Called after the body with its result, sync or async; a returned result replaces it."""
