"""``LoopAgent``: one live session driven by the loop (the ``dsh_agent.Agent`` it hands out)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from dsh_agent import (
    AgentOptions,
    AgentStatus,
    ApprovalOutcome,
    ApprovalRequest,
    CancelCause,
    CheckpointPoint,
    Incoming,
    SendTarget,
)
from dsh_agent_loop._approval import (
    ask_approval,
    denial_for,
    effective_approval_policy,
    execution_request,
)
from dsh_agent_loop._errors import AgentBusyError, LoopClosedError
from dsh_agent_loop._inbox import Inbox, InboxItem
from dsh_agent_loop._journal import Journal
from dsh_agent_loop._prefix import compose_prefix
from dsh_agent_loop._requests import RequestBuilder
from dsh_agent_loop._runtime import Runtime
from dsh_agent_loop._turn import run_turn
from dsh_llm import Message, UserMessage
from dsh_session import Session
from dsh_tools import Allow, Deny, ToolExecution

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from dsh_agent import ApprovalPolicy

__all__ = ["LoopAgent"]

_DISPOSED = CancelCause("disposed")


def _last_turn(session: Session) -> int:
    for index in range(len(session.events) - 1, -1, -1):
        event = session.events[index]
        if event.type == "turn/start":
            data: Any = event.data
            return int(data["turn"])
    return 0


def _as_messages(messages: Incoming | Sequence[Incoming]) -> list[UserMessage]:
    items: Sequence[Incoming] = (
        [messages] if isinstance(messages, str | UserMessage) else list(messages)
    )
    result: list[UserMessage] = []
    for item in items:
        if isinstance(item, str):
            result.append(UserMessage.from_text(item))
        elif isinstance(item, UserMessage):
            result.append(item)
        else:
            raise TypeError(f"send takes UserMessage or str, not {type(item).__name__}")
    return result


class LoopAgent:
    """A live agent of an ``AgentLoop``: its session, inbox, turns, and persistence journal.

    Get one from ``AgentLoop.create``, ``resume`` or ``fork``; end it with ``aclose()`` (or the
    loop's ``aclose``), which cancels a running turn, waits for it, drains the journal and closes
    the write handle. It is also the ``ToolCaller`` its tools see (``session``, ``cwd``).
    """

    def __init__(
        self,
        *,
        session: Session,
        options: AgentOptions,
        system: str | None,
        runtime: Runtime,
        journal: Journal | None,
        on_closed: Callable[[LoopAgent], None],
    ) -> None:
        self._session = session
        self._options = options
        self._system = system
        self.runtime = runtime
        self._journal = journal
        self._on_closed = on_closed
        self.inbox = Inbox()
        self.builder = RequestBuilder(
            session,
            seed=options.request_config(),
            system=system,
            extensions=runtime.extensions,
            window_of=runtime.window_of,
        )
        self._prefix: tuple[Message, ...] | None = None
        self._last_turn = _last_turn(session)
        self._runner: asyncio.Task[None] | None = None
        self._turn_task: asyncio.Task[None] | None = None
        self._cause: CancelCause | None = None
        self._wake_latched = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False
        self._close_task: asyncio.Task[None] | None = None
        self._held = False

    # -- the Agent protocol ---------------------------------------------------------------

    @property
    def id(self) -> str:
        """The session id."""
        return self._session.id

    @property
    def session(self) -> Session:
        """The live session log."""
        return self._session

    @property
    def options(self) -> AgentOptions:
        """The route and limits this agent was created (or resumed) with."""
        return self._options

    @property
    def system(self) -> str | None:
        """The system prompt of every request (``None``: none)."""
        return self._system

    @property
    def status(self) -> AgentStatus:
        """``running`` while turns run, else ``idle``."""
        return "idle" if self._runner is None else "running"

    @property
    def cwd(self) -> str | None:
        """The session's working directory."""
        return self._session.header.cwd

    @property
    def closed(self) -> bool:
        """Whether ``aclose`` was called."""
        return self._closing

    def send(
        self, messages: Incoming | Sequence[Incoming], *, target: SendTarget, wake: bool
    ) -> None:
        """Queue ``messages`` for ``target``; with ``wake``, start turns if idle.

        A waking send during a turn that is being cancelled waits for the next turn. Raises
        :class:`LoopClosedError` once the agent is closing.
        """
        if self._closing:
            raise LoopClosedError(self.id, "the agent is closed; it takes no more messages")
        if target not in ("next-turn", "next-step"):
            raise ValueError(f"target must be 'next-turn' or 'next-step', not {target!r}")
        batch = _as_messages(messages)
        if not batch:
            return
        if wake and self._cause is not None:
            target = "next-turn"
            self._wake_latched = True
        self.inbox.put(InboxItem(message, target, wake) for message in batch)
        if wake and self._runner is None and not self._held:
            self._start_runner()

    def _start_runner(self) -> None:
        self._idle.clear()
        self._runner = asyncio.get_running_loop().create_task(self._run())

    def followup(self, messages: Incoming | Sequence[Incoming]) -> None:
        """Queue for the next turn and wake (one send, one turn)."""
        self.send(messages, target="next-turn", wake=True)

    def steer(self, messages: Incoming | Sequence[Incoming]) -> None:
        """Queue for the next step and wake."""
        self.send(messages, target="next-step", wake=True)

    def inject(self, messages: Incoming | Sequence[Incoming]) -> None:
        """Queue for the next step without waking: staged until something wakes the agent."""
        self.send(messages, target="next-step", wake=False)

    def cancel(self, cause: CancelCause | None = None, *, keep_inbox: bool = False) -> None:
        """Stop the running turn (a no-op when idle); the first cause of an activity wins."""
        if self._runner is None:
            return
        if not keep_inbox:
            self.inbox.clear()
            self._wake_latched = False
        if self._cause is not None:
            return
        self._cause = cause if cause is not None else CancelCause("user")
        if self._turn_task is not None and not self._turn_task.done():
            self._turn_task.cancel()

    async def wait_idle(self) -> None:
        """Return once no turn runs, none is about to, and no maintenance holds the agent."""
        await self._idle.wait()

    @contextlib.asynccontextmanager
    async def maintenance(self) -> AsyncIterator[None]:
        """Hold the idle agent for work between turns (a manual compaction): inside the block
        no turn starts; messages sent meanwhile keep their order and start their turn when the
        block ends. Raises :class:`AgentBusyError` at once (nothing held) when a turn runs,
        waking work is queued, other maintenance holds it, or the agent is closing."""
        if self._closing:
            raise AgentBusyError(self.id, "it is closing")
        if self._runner is not None:
            raise AgentBusyError(self.id, "a turn is running")
        if self._held:
            raise AgentBusyError(self.id, "other maintenance holds it")
        if self.inbox.has_waking():
            raise AgentBusyError(self.id, "messages are queued for its next turn")
        self._held = True
        self._idle.clear()
        try:
            yield
        finally:
            self._held = False
            if self.inbox.has_waking() and not self._closing:
                self._start_runner()
            else:
                self._idle.set()

    # -- approvals --------------------------------------------------------------------------

    @property
    def approval_policy(self) -> ApprovalPolicy:
        """The session's last logged ``approval/policy``, else the loop's default."""
        return effective_approval_policy(self._session, self.runtime.approval_policy)

    async def request_approval(
        self,
        tool_name: str,
        *,
        call_id: str | None = None,
        reason: str | None = None,
        arguments: Mapping[str, Any] | None = None,
    ) -> ApprovalOutcome:
        """Ask whether ``tool_name`` may run, audited in the open turn.

        Logs ``approval/asked {id, toolName, callId?, reason?}`` (a fresh UUID ``id``), decides,
        then logs ``approval/decided {id, outcome}``. A cancelled turn gives ``cancelled``;
        policy ``never`` gives ``rejected`` before any answerer runs; otherwise the
        ``approval`` answerers decide (the first answer wins; none, a raise or a foreign value:
        ``unavailable``). A cancel while an answerer thinks logs ``cancelled`` and re-raises
        ``CancelledError``. Raises ``ApprovalOutsideTurnError`` (nothing logged) between turns.
        """
        request = ApprovalRequest(
            agent=self, tool_name=tool_name, call_id=call_id, reason=reason, arguments=arguments
        )
        return await self._ask(request)

    async def _ask(self, request: ApprovalRequest) -> ApprovalOutcome:
        return await ask_approval(
            self._session,
            request,
            answerers=self.runtime.extensions.approval,
            default_policy=self.runtime.approval_policy,
            aborting=self.aborting,
        )

    async def approve(self, execution: ToolExecution, reason: str | None) -> Allow | Deny:
        """The registry's approver for this agent's calls (``dsh_tools.Approver``)."""
        outcome = await self._ask(execution_request(self, execution, reason))
        return denial_for(execution.tool_name, outcome)

    # -- what the turn uses ---------------------------------------------------------------

    def next_turn(self) -> int:
        """Number the turn that starts now."""
        self._last_turn += 1
        return self._last_turn

    def aborting(self) -> bool:
        """Whether the current activity was cancelled."""
        return self._cause is not None

    def raise_if_aborting(self) -> None:
        """Raise ``CancelledError`` when the activity was cancelled but no await has delivered
        it yet (a listener that cancels synchronously)."""
        if self._cause is not None:
            raise asyncio.CancelledError

    def abort_cause(self) -> CancelCause:
        """Why the turn was cancelled (``disposed`` when it was cancelled from outside)."""
        return self._cause if self._cause is not None else _DISPOSED

    async def session_prefix(self) -> tuple[Message, ...]:
        """The prefix of this instance, composed on first use. A composition interrupted by
        cancellation is discarded, so the next turn composes again."""
        if self._prefix is None:
            composed = await compose_prefix(self.runtime.extensions, self)
            if self.aborting():  # a listener swallowed the cancel: do not keep its fallback
                raise asyncio.CancelledError
            self._prefix = composed
        return self._prefix

    def attach_journal(self, journal: Journal) -> None:
        """Route this agent's events into ``journal`` from now on (set once, by the loop)."""
        if self._journal is not None:
            raise RuntimeError(f"agent {self.id!r} already has a journal")
        self._journal = journal

    async def flush(self) -> None:
        """Append every logged event to the write handle and make it durable (a no-op without
        persistence). Raises ``CheckpointError`` when it cannot."""
        if self._journal is not None:
            await self._journal.flush()

    async def checkpoint(self, point: CheckpointPoint) -> None:
        """Let the checkpoint policy flush at ``point``."""
        if self._journal is not None:
            await self.runtime.checkpoints.checkpoint(point, self, self.flush)

    # -- running --------------------------------------------------------------------------

    def _should_run(self) -> bool:
        if self._closing:
            return False
        if self._cause is not None:  # the last turn was cancelled: only a later wake goes on
            latched = self._wake_latched
            self._wake_latched = False
            self._cause = None
            return latched and len(self.inbox) > 0
        return self.inbox.has_waking()

    async def _run(self) -> None:
        try:
            while self._should_run():
                self._turn_task = asyncio.get_running_loop().create_task(run_turn(self))
                try:
                    await asyncio.shield(self._turn_task)
                except asyncio.CancelledError:  # the runner itself was cancelled: dispose
                    self.cancel(_DISPOSED)
                    await asyncio.wait([self._turn_task])
                    raise
                finally:
                    self._turn_task = None
        finally:
            self._runner = None
            self._cause = None
            self._wake_latched = False
            self._idle.set()

    # -- closing --------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Cancel (cause ``disposed``), wait for the turn to end, drain and close the write
        handle, and leave the loop. Idempotent (every caller waits for the same close);
        failures are raised together as an ``ExceptionGroup``, never swallowed."""
        if self._close_task is None:
            self._closing = True
            self._close_task = asyncio.get_running_loop().create_task(self._close())
        await asyncio.shield(self._close_task)

    async def _close(self) -> None:
        self.cancel(_DISPOSED)
        failures: list[Exception] = []
        try:
            await self.wait_idle()
            if self._journal is not None:
                try:
                    await self._journal.close()
                except Exception as error:
                    failures.append(error)
        finally:
            self._on_closed(self)
        if failures:
            raise ExceptionGroup(f"closing agent {self.id!r} failed", failures)

    def __repr__(self) -> str:
        return f"<LoopAgent {self.id!r} {self.status}>"
