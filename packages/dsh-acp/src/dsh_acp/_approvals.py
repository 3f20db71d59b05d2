"""Approvals asked of the editor: a call that needs approval becomes
``session/request_permission`` with allow once, allow for this session, and reject.

The loop logs each question as ``approval/asked`` + ``approval/decided``, as it does for the
terminal; an "allow for this session" answer is logged and kept as the terminal's is
(`dsh_agent_core.SessionGrants`: the command ``allow-for-session``), and covers later requests of
the same kind in the same session without asking. A request the editor cancels, an answer that
is not one of the options, or an editor that cannot be asked never allows the call."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from acp.schema import AllowedOutcome, PermissionOption, RequestPermissionResponse, ToolCallUpdate

from dsh_acp._calls import call_view, command_content, one_line
from dsh_agent import ApprovalOutcome, ApprovalRequest
from dsh_agent_core import SessionGrants

__all__ = ["ALLOW_ALWAYS", "ALLOW_ONCE", "PERMISSION_OPTIONS", "REJECT", "EditorApprovals"]

_log = logging.getLogger("dsh_acp")

ALLOW_ONCE = "allow-once"
"""The option id of "allow once"."""
ALLOW_ALWAYS = "allow-for-session"
"""The option id of "allow for this session" (ACP's ``allow_always``)."""
REJECT = "reject"
"""The option id of "reject"."""

PERMISSION_OPTIONS = (
    PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
    PermissionOption(option_id=ALLOW_ALWAYS, name="Allow for this session", kind="allow_always"),
    PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
)
"""The options every permission request offers."""


class PermissionClient(Protocol):
    """The editor's end: ``session/request_permission``."""

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        """Ask the user; their answer."""
        ...


class EditorApprovals:
    """The approval answerer of the sessions an editor drives (register it on
    ``harness.extensions.approval``): ``cwd_of(session_id)`` says whether a session is the
    editor's (its working directory) or not (``None``: no opinion, another answerer asks)."""

    def __init__(self, client: PermissionClient, cwd_of: Callable[[str], str | None]) -> None:
        self._client = client
        self._cwd_of = cwd_of
        self.grants = SessionGrants()
        self._asking: dict[str, asyncio.Lock] = {}

    async def __call__(self, request: ApprovalRequest) -> ApprovalOutcome | None:
        """Answer ``request``: at once under a grant of its kind, else ask the editor."""
        session_id = request.agent.id
        cwd = self._cwd_of(session_id)
        if cwd is None:
            return None
        if self.grants.covers(request):
            return "allowed-once"
        lock = self._asking.setdefault(session_id, asyncio.Lock())
        async with lock:  # one question at a time per session; a grant may answer the next
            if self.grants.covers(request):
                return "allowed-once"
            return await self._ask(request, session_id, cwd)

    async def _ask(self, request: ApprovalRequest, session_id: str, cwd: str) -> ApprovalOutcome:
        arguments = dict(request.arguments or {})
        view = call_view(request.tool_name, arguments, cwd)
        content = list(view.content)
        heading = view.title
        command = arguments.get("command")
        if request.tool_name == "bash" and isinstance(command, str):
            # what runs, never only the model's description of it
            heading = f"bash: {one_line(command)}"
            content.insert(0, command_content(command))
        title = heading if not request.reason else f"{heading} — {request.reason}"
        tool_call = ToolCallUpdate(
            tool_call_id=request.call_id or f"approval-{request.tool_name}",
            title=title[:400],
            kind=view.kind,
            status="pending",
            content=content or None,
            raw_input=view.raw_input,
        )
        try:
            response = await self._client.request_permission(
                session_id=session_id, tool_call=tool_call, options=list(PERMISSION_OPTIONS)
            )
        except Exception as error:  # the editor went away or answered with an error
            _log.warning("session %s: the editor could not be asked: %s", session_id, error)
            return "unavailable"
        outcome = response.outcome
        if not isinstance(outcome, AllowedOutcome):
            return "cancelled"
        if outcome.option_id == ALLOW_ONCE:
            return "allowed-once"
        if outcome.option_id == ALLOW_ALWAYS:
            self.grants.grant(request)
            return "allowed-once"
        return "rejected"  # reject, or an option this agent never offered
