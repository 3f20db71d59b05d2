"""A caller (session id + cwd, optionally a log of events) and calls through a real registry."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_tool_fs import FileTools
from dsh_tools import Allow, Deny, ToolCall, ToolExecution, ToolRegistry, ToolResult


@dataclass
class Header:
    id: str


@dataclass
class Event:
    type: str
    data: Any


@dataclass(eq=False)  # one log is one object, as a dsh_session.Session is
class Session:
    header: Header
    events: list[Event] = field(default_factory=list)


@dataclass
class Caller:
    """What a tool sees of the agent: ``session.header.id``, ``cwd``; ``session.events`` is the
    log a resumed session's read state is rebuilt from."""

    session: Session
    cwd: str | None

    @classmethod
    def at(cls, cwd: Path, session_id: str = "s1") -> Caller:
        return cls(Session(Header(session_id)), str(cwd))


class Tools:
    """``FileTools`` on a registry; ``call(name, **args)`` returns the result, logging it as the
    loop would (``tool/result`` with the result's durable form) in the caller's session."""

    def __init__(self, tools: FileTools, caller: Caller, approve: bool | None = None) -> None:
        self.registry = ToolRegistry()
        tools.register(self.registry)
        self.caller = caller
        self.asked: list[str | None] = []
        self.approve = approve
        self._next = 0

    async def _approver(self, execution: ToolExecution, reason: str | None) -> Allow | Deny:
        self.asked.append(reason)
        return Allow() if self.approve else Deny("the user said no")

    async def call(self, name: str, **arguments: Any) -> ToolResult:
        self._next += 1
        call = ToolCall(f"c{self._next}", name, json.dumps(arguments))
        approver = self._approver if self.approve is not None else None
        result = await self.registry.execute(call, self.caller, approver=approver)
        self.caller.session.events.append(Event("tool/result", result.to_durable()))
        return result


def code(result: ToolResult) -> str | None:
    return result.error.code if result.error is not None else None
