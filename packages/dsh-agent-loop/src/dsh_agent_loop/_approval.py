"""Asking for approval inside a turn, audited as ``approval/asked`` → ``approval/decided``."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from dsh_agent import (
    APPROVAL_OUTCOMES,
    ApprovalAnswerer,
    ApprovalOutcome,
    ApprovalPolicy,
    ApprovalRequest,
    logged_approval_policy,
)
from dsh_agent_loop._errors import ApprovalOutsideTurnError
from dsh_session import Session, open_turn_at
from dsh_tools import ALLOW, Allow, Deny, ToolExecution

__all__ = ["ask_approval", "denial_for", "effective_approval_policy", "execution_request"]


def effective_approval_policy(session: Session, default: ApprovalPolicy) -> ApprovalPolicy:
    """The last ``approval/policy`` the session logged, else ``default`` (the seam's fold:
    ``dsh_agent.logged_approval_policy``; a value outside the vocabulary is ``never``)."""
    logged = logged_approval_policy(session)
    return default if logged is None else logged


async def _answer(
    answerers: Iterable[ApprovalAnswerer], request: ApprovalRequest
) -> ApprovalOutcome:
    """The first answer of ``answerers``; a raise or a foreign value is ``unavailable``."""
    for answerer in answerers:
        try:
            answer: object = answerer(request)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception:
            return "unavailable"
        if answer is None:
            continue
        for outcome in APPROVAL_OUTCOMES:
            if answer == outcome and isinstance(answer, str):
                return outcome
        return "unavailable"
    return "unavailable"


async def ask_approval(
    session: Session,
    request: ApprovalRequest,
    *,
    answerers: Iterable[ApprovalAnswerer],
    default_policy: ApprovalPolicy,
    aborting: Callable[[], bool],
) -> ApprovalOutcome:
    """Ask, audit and return the outcome of one question (see ``LoopAgent.request_approval``).

    Raises ``ApprovalOutsideTurnError`` (nothing logged) when no turn is open. A cancel while
    an answerer thinks logs ``cancelled`` and re-raises ``CancelledError``.
    """
    if open_turn_at(session.events, len(session.events) - 1) is None:
        raise ApprovalOutsideTurnError(session.id, request.tool_name)
    question_id = str(uuid.uuid4())
    asked: dict[str, Any] = {"id": question_id, "toolName": request.tool_name}
    if request.call_id is not None:
        asked["callId"] = request.call_id
    if request.reason is not None:
        asked["reason"] = request.reason
    session.append("approval/asked", asked)
    cancelled = False
    if aborting():
        outcome: ApprovalOutcome = "cancelled"
    elif effective_approval_policy(session, default_policy) == "never":
        outcome = "rejected"
    else:
        try:
            outcome = await _answer(answerers, request)
        except asyncio.CancelledError:
            outcome, cancelled = "cancelled", True
        if aborting():  # cancelled while asking: a late answer is discarded
            outcome = "cancelled"
    session.append("approval/decided", {"id": question_id, "outcome": outcome})
    if cancelled:
        raise asyncio.CancelledError
    return outcome


def denial_for(tool_name: str, outcome: ApprovalOutcome) -> Allow | Deny:
    """What the registry does with ``outcome``: run the call, or deny it with a reason that
    tells the model a human "no" from a cancelled question and from an absent channel."""
    if outcome == "allowed-once":
        return ALLOW
    if outcome == "rejected":
        return Deny(f'the user rejected tool "{tool_name}"')
    if outcome == "cancelled":
        return Deny(f'approval for tool "{tool_name}" was cancelled')
    return Deny(f'tool "{tool_name}" requires approval, but no approval channel is available')


def execution_request(agent: Any, execution: ToolExecution, reason: str | None) -> ApprovalRequest:
    """The question a tool call that needs approval asks."""
    return ApprovalRequest(
        agent=agent,
        tool_name=execution.tool_name,
        call_id=execution.call_id,
        reason=reason,
        arguments=execution.arguments,
    )
