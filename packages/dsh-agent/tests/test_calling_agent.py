"""``calling_agent``: the agent behind a tool call, found through the seam."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dsh_agent import AgentOptions, CancelCause, Incoming, SendTarget, calling_agent
from dsh_session import Session, SessionHeader
from dsh_tools import ToolExecution


@dataclass(eq=False)
class Caller:
    """A tool caller that is only that: a session and a cwd."""

    session: Session = field(default_factory=lambda: Session(SessionHeader(id="c", created_at=0)))
    cwd: str | None = None


class WholeAgent(Caller):
    """A caller that is also an agent (the loop's agents are)."""

    options = AgentOptions(provider="p", model="m")
    status = "idle"

    @property
    def id(self) -> str:
        return self.session.header.id

    def send(
        self, messages: Incoming | Sequence[Incoming], *, target: SendTarget, wake: bool
    ) -> None:
        del messages, target, wake

    def followup(self, messages: Incoming | Sequence[Incoming]) -> None:
        del messages

    def steer(self, messages: Incoming | Sequence[Incoming]) -> None:
        del messages

    def inject(self, messages: Incoming | Sequence[Incoming]) -> None:
        del messages

    def cancel(self, cause: CancelCause | None = None, *, keep_inbox: bool = False) -> None:
        del cause, keep_inbox

    async def wait_idle(self) -> None:
        return None


def test_an_agent_caller_is_found() -> None:
    agent = WholeAgent()
    assert calling_agent(ToolExecution("c1", "bash", {}, caller=agent)) is agent


def test_a_caller_that_is_not_an_agent_and_no_caller_give_none() -> None:
    assert calling_agent(ToolExecution("c1", "bash", {}, caller=Caller())) is None
    assert calling_agent(ToolExecution("c1", "bash", {})) is None
