"""The approval seam: what a tool call that needs a human's yes asks, and what can answer.

The loop asks (``Agent``-side ``request_approval``) and audits every question as the pair
``approval/asked {id, toolName, callId?, reason?}`` → ``approval/decided {id, outcome}`` inside
the open turn. Answerers register on ``Extensions.approval``: the first one that answers wins;
``None`` passes to the next. There is no "allow always": a grant covers one call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    from dsh_agent._agent import Agent

__all__ = [
    "APPROVAL_OUTCOMES",
    "APPROVAL_POLICIES",
    "ApprovalAnswerer",
    "ApprovalOutcome",
    "ApprovalPolicy",
    "ApprovalRequest",
]

ApprovalOutcome: TypeAlias = Literal["allowed-once", "rejected", "cancelled", "unavailable"]
"""How a question ended. Only ``allowed-once`` lets the call run, and only that call."""

APPROVAL_OUTCOMES: tuple[ApprovalOutcome, ...] = (
    "allowed-once",
    "rejected",
    "cancelled",
    "unavailable",
)
"""The closed outcome vocabulary, as format v0 logs it in ``approval/decided``."""

ApprovalPolicy: TypeAlias = Literal["ask", "never"]
"""``ask``: answerers are asked; ``never``: every question is ``rejected`` before any answerer
runs (no listener can bypass it). A session's last ``approval/policy`` event sets it."""

APPROVAL_POLICIES: tuple[ApprovalPolicy, ...] = ("ask", "never")
"""The policy vocabulary of ``approval/policy``."""


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One question: ``agent`` asks to run tool ``tool_name`` (call ``call_id``) because of
    ``reason`` (for a sandbox escalation: ``escalate sandbox to <mode>: <justification>``).

    ``arguments`` are the call's parsed, read-only arguments, for an answerer to show (the
    command, say); they are not logged again — the ``tool/call`` event already holds them.
    """

    agent: Agent
    tool_name: str
    call_id: str | None = None
    reason: str | None = None
    arguments: Mapping[str, Any] | None = None


ApprovalAnswerer = Callable[
    [ApprovalRequest], Awaitable[ApprovalOutcome | None] | ApprovalOutcome | None
]
"""``(request) -> outcome or None`` (no opinion). A raising answerer or one that answers
outside the vocabulary ends the question as ``unavailable`` (fail closed)."""
