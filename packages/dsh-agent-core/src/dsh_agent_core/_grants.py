""" "Allow for this session" grants, shared by every place that answers approvals (the terminal's
prompt, an editor through ACP): what a grant covers, and how it is logged.

A grant covers later requests of the same kind in the same session (the same tool asking for the
same sandbox, or the same tool when it asks for no sandbox). It is logged as the command
``allow-for-session`` (``command/run`` + ``command/done``): format v0 has no event of its own for
it, and the TypeScript harness refuses a type outside its inventory. Each request a grant answers
is still logged by the loop as its ``approval/asked`` and ``approval/decided`` pair.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from dsh_agent import ApprovalRequest

__all__ = ["GRANT_COMMAND", "SessionGrants", "grant_kind", "log_grant"]

GRANT_COMMAND = "allow-for-session"
"""The command name an "allow for this session" answer is logged under."""

_ESCALATION = re.compile(r"^escalate sandbox to (\S+?):")


def grant_kind(request: ApprovalRequest) -> tuple[str, str]:
    """What a session grant for ``request`` covers: the tool, and the sandbox it asks for
    (``""``: none)."""
    found = _ESCALATION.match(request.reason or "")
    return request.tool_name, found.group(1) if found else ""


def log_grant(request: ApprovalRequest, kind: tuple[str, str]) -> None:
    """Log an "allow for this session" answer in the asking agent's session, as the command the
    user gave (``command/run`` + ``command/done``)."""
    tool, sandbox = kind
    command_id = f"command-{uuid.uuid4()}"
    args = f"{tool} {sandbox}".strip()
    run: dict[str, Any] = {"commandId": command_id, "name": GRANT_COMMAND, "args": args}
    run["source"] = {"kind": "user"}
    request.agent.session.append("command/run", run)
    done: dict[str, Any] = {"commandId": command_id, "kind": "success"}
    done["text"] = f"allowed for this session: {args}"
    request.agent.session.append("command/done", done)


class SessionGrants:
    """The "allow for this session" grants one answerer gave: ``(session id, tool, sandbox)``
    each. A grant covers its own session only."""

    def __init__(self) -> None:
        self.granted: set[tuple[str, str, str]] = set()
        """``(session id, tool, sandbox)`` of each grant."""

    def covers(self, request: ApprovalRequest) -> bool:
        """Whether a grant already answers ``request``."""
        return (request.agent.id, *grant_kind(request)) in self.granted

    def grant(self, request: ApprovalRequest) -> tuple[str, str]:
        """Grant ``request``'s kind for its session and log it (`log_grant`); its kind."""
        kind = grant_kind(request)
        self.granted.add((request.agent.id, *kind))
        log_grant(request, kind)
        return kind
