"""The ``Agent`` protocol: one session driven by a model in turns, and how work reaches it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from dsh_agent._options import AgentOptions
from dsh_llm import UserMessage
from dsh_session import Session
from dsh_tools import ToolExecution

__all__ = [
    "Agent",
    "AgentStatus",
    "CancelCause",
    "CancelKind",
    "Incoming",
    "SendTarget",
    "calling_agent",
]

AgentStatus = Literal["idle", "running"]
"""``running`` while a turn is in progress, else ``idle``."""

SendTarget = Literal["next-turn", "next-step"]
"""Where a sent message enters: the next turn (one send, one turn), or the next step of the turn
in progress (or of the next turn, when none is)."""

CancelKind = Literal["user", "parent", "hook", "disposed"]
"""Who cancelled: the user, a parent agent, a hook (with a reason), or disposal."""

Incoming = UserMessage | str
"""What ``send`` takes: a user message, or text (a one-block message from the user)."""


@dataclass(frozen=True, slots=True)
class CancelCause:
    """Why a turn was cancelled; the turn ends ``aborted`` with this as its reason.

    ``reason`` is only for ``hook`` (what the hook said).
    """

    kind: CancelKind = "user"
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("user", "parent", "hook", "disposed"):
            raise ValueError(f"unknown cancel kind {self.kind!r}")
        if self.reason is not None and self.kind != "hook":
            raise ValueError("only a 'hook' cancel carries a reason")

    def to_wire(self) -> dict[str, Any]:
        """``{"kind": ...}`` (plus ``"reason"`` for a hook), as ``turn/end`` logs it."""
        wire: dict[str, Any] = {"kind": self.kind}
        if self.reason is not None:
            wire["reason"] = self.reason
        return wire


@runtime_checkable
class Agent(Protocol):
    """One session driven by a model: messages go in with ``send``, turns run, events are logged.

    ``id`` is the session id. ``send(messages, target, wake)`` is the one delivery primitive:
    ``followup`` (next turn, wake), ``steer`` (next step, wake) and ``inject`` (next step, no
    wake: staged until something else wakes the agent) are its presets. ``cancel`` stops the
    turn in progress (a no-op when idle); the first cause of a turn wins.
    """

    @property
    def id(self) -> str:
        """The agent's id, which is its session id."""
        ...

    @property
    def session(self) -> Session:
        """The live, append-only session log."""
        ...

    @property
    def options(self) -> AgentOptions:
        """The route and limits this agent asks for."""
        ...

    @property
    def status(self) -> AgentStatus:
        """``running`` while a turn is in progress, else ``idle``."""
        ...

    @property
    def cwd(self) -> str | None:
        """The session's working directory (absolute), when it has one."""
        ...

    def send(
        self, messages: Incoming | Sequence[Incoming], *, target: SendTarget, wake: bool
    ) -> None:
        """Queue ``messages`` for ``target``; ``wake`` starts a turn when the agent is idle."""
        ...

    def followup(self, messages: Incoming | Sequence[Incoming]) -> None:
        """``send(..., target="next-turn", wake=True)``."""
        ...

    def steer(self, messages: Incoming | Sequence[Incoming]) -> None:
        """``send(..., target="next-step", wake=True)``."""
        ...

    def inject(self, messages: Incoming | Sequence[Incoming]) -> None:
        """``send(..., target="next-step", wake=False)``."""
        ...

    def cancel(self, cause: CancelCause | None = None, *, keep_inbox: bool = False) -> None:
        """Stop the turn in progress (``cause`` defaults to the user). Without ``keep_inbox``
        the queued messages are dropped too; with it they wait for a later wake."""
        ...

    async def wait_idle(self) -> None:
        """Return once the agent is idle with nothing left to run."""
        ...


def calling_agent(execution: ToolExecution) -> Agent | None:
    """The agent behind a tool call: a loop passes its agent as the call's caller (an `Agent`
    is a ``dsh_tools.ToolCaller``), so a plugin that must act on it (stop its turn, read its
    model) finds it here; ``None`` for a call without a caller or made by anything else."""
    caller = execution.caller
    return caller if isinstance(caller, Agent) else None
