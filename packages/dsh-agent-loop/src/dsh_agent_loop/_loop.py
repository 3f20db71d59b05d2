"""``AgentLoop``: creates, resumes and forks agents over one model, one tool registry and an
optional persistence backend, and closes them all."""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal

from dsh_agent import (
    APPROVAL_POLICIES,
    AgentOptions,
    ApprovalPolicy,
    CheckpointPolicy,
    Extensions,
    RequestErrorListener,
    SessionStartSource,
)
from dsh_agent_loop._agent import LoopAgent
from dsh_agent_loop._checkpoints import FlushPolicy
from dsh_agent_loop._errors import (
    AgentLoopError,
    DuplicateAgentError,
    LoopClosedError,
    PersistenceNotConfiguredError,
    ResumeOptionsError,
)
from dsh_agent_loop._journal import Journal
from dsh_agent_loop._requests import logged_config
from dsh_agent_loop._retry import RetryPolicy
from dsh_agent_loop._runtime import Runtime
from dsh_llm import Model
from dsh_persistence import SessionHandle, SessionPersistence
from dsh_session import (
    Session,
    SessionEvent,
    SessionHeader,
    fork_seed,
    interrupted_turn_closers,
)
from dsh_tools import ToolRegistry

__all__ = ["AgentLoop"]

_DEFAULT: Any = object()


def _options_from_log(session: Session, given: AgentOptions | None) -> AgentOptions:
    if given is not None:
        return given
    config = logged_config(session)
    if config is None:
        raise ResumeOptionsError(session.id)
    return AgentOptions(
        provider=config.provider,
        model=config.model,
        max_tokens=config.max_tokens,
        reasoning_effort=config.reasoning_effort,
    )


def _system_from_log(session: Session, given: str | None) -> str | None:
    """The system prompt to continue with: the one given, else the one the log last sent."""
    if given is not None:
        return given
    header = session.request_header
    return header.system if header is not None else None


class AgentLoop:
    """Runs agents: turns of model calls and tool calls over durable session logs.

    ``model`` answers every request, or ``{provider: model}`` routes by the request's provider.
    ``tools`` is the registry every agent's calls go through. With ``persistence``, each agent
    owns its session's write handle for its lifetime; every committed event is routed into it,
    and ``checkpoints`` (default: :class:`FlushPolicy`, flushing before every request, before
    every tool body and at turn end) make the log durable, failing closed. ``retry`` is the last
    ``request_error`` listener (default :class:`RetryPolicy`; ``None``: no retries).
    ``max_parallel_tools`` bounds the pool of concurrency-safe calls; ``max_steps_per_turn``
    (default none) ends a runaway turn with error ``MAX_STEPS``. ``check_requests`` turns on the
    invariant companion: every request is compared with what the log alone rebuilds, and a
    difference ends the turn with ``REQUEST_INVARIANT`` (kept in ``invariant_failures``).
    ``approval_policy`` (``ask`` or ``never``) applies to a session that logged no
    ``approval/policy`` of its own; questions are answered by ``extensions.approval``.
    """

    def __init__(
        self,
        model: Model | Mapping[str, Model],
        tools: ToolRegistry | None = None,
        *,
        persistence: SessionPersistence | None = None,
        extensions: Extensions | None = None,
        checkpoints: CheckpointPolicy | None = None,
        retry: RequestErrorListener | None = _DEFAULT,
        max_parallel_tools: int = 10,
        max_steps_per_turn: int | None = None,
        check_requests: bool = False,
        approval_policy: ApprovalPolicy = "ask",
    ) -> None:
        if type(max_parallel_tools) is not int or max_parallel_tools < 1:
            raise ValueError(f"max_parallel_tools must be >= 1, not {max_parallel_tools!r}")
        if max_steps_per_turn is not None and (
            type(max_steps_per_turn) is not int or max_steps_per_turn < 1
        ):
            raise ValueError(f"max_steps_per_turn must be >= 1, not {max_steps_per_turn!r}")
        if approval_policy not in APPROVAL_POLICIES:
            raise ValueError(f"approval_policy must be 'ask' or 'never', not {approval_policy!r}")
        if isinstance(model, Mapping):
            models: Mapping[str, Model] = dict(model)
            default_model: Model | None = None
        else:
            models, default_model = {}, model
        self._persistence = persistence
        self._runtime = Runtime(
            models=models,
            default_model=default_model,
            tools=tools if tools is not None else ToolRegistry(),
            extensions=extensions if extensions is not None else Extensions(),
            checkpoints=checkpoints if checkpoints is not None else FlushPolicy(),
            retry=RetryPolicy() if retry is _DEFAULT else retry,
            max_parallel_tools=max_parallel_tools,
            max_steps_per_turn=max_steps_per_turn,
            check_requests=check_requests,
            approval_policy=approval_policy,
        )
        self._agents: dict[str, LoopAgent] = {}
        self._closed = False

    # -- what it holds ----------------------------------------------------------------------

    @property
    def extensions(self) -> Extensions:
        """The extension points every agent of this loop runs."""
        return self._runtime.extensions

    @property
    def tools(self) -> ToolRegistry:
        """The tool registry every agent's calls go through."""
        return self._runtime.tools

    @property
    def persistence(self) -> SessionPersistence | None:
        """The backend session logs are written to, if any."""
        return self._persistence

    @property
    def invariant_failures(self) -> list[AgentLoopError]:
        """Requests the invariant companion refused (always empty unless ``check_requests``)."""
        return self._runtime.invariant_failures

    @property
    def agents(self) -> list[LoopAgent]:
        """The live agents, in creation order."""
        return list(self._agents.values())

    def get(self, session_id: str) -> LoopAgent | None:
        """The live agent of ``session_id``, if there is one."""
        return self._agents.get(session_id)

    # -- making agents ----------------------------------------------------------------------

    def _check_open(self, session_id: str) -> None:
        if self._closed:
            raise LoopClosedError(session_id, "the loop is closed")
        if session_id in self._agents:
            raise DuplicateAgentError(session_id)

    async def create(
        self,
        session_id: str | None = None,
        *,
        options: AgentOptions,
        cwd: str | None = None,
        system: str | None = None,
        parent_session: str | None = None,
        origin: Literal["subagent"] | None = None,
        delegation_depth: int | None = None,
        agent_preset: str | None = None,
    ) -> LoopAgent:
        """A new agent over a new session (``session_id`` default: a fresh UUID).

        With persistence the session's write handle is created first (an id already stored is
        refused with ``SessionAlreadyExistsError``); it materializes on the first checkpoint.
        ``session_start`` listeners run (source ``startup``) before the agent is returned; if
        one fails the handle is closed, leaving nothing behind.
        """
        session_id = session_id if session_id is not None else str(uuid.uuid4())
        self._check_open(session_id)
        header = SessionHeader(
            id=session_id,
            created_at=time.time_ns() // 1_000_000,
            cwd=cwd,
            parent_session=parent_session,
            origin=origin,
            # the TypeScript harness requires the field on every header it reads (0: top level);
            # it is set where a session is created, never filled in by the codec
            delegation_depth=0 if delegation_depth is None else delegation_depth,
            agent_preset=agent_preset,
        )
        return await self._start(header, [], 0, options, system, stored=0, source="startup")

    async def resume(
        self,
        session_id: str,
        *,
        options: AgentOptions | None = None,
        system: str | None = None,
    ) -> LoopAgent:
        """The agent of a stored session, continuing where its log ends.

        Takes the session's write handle first (another writer anywhere raises
        ``SessionAlreadyOwnedError``), reads the log, appends the closers that balance a turn a
        crash left open (``TOOL_OUTCOME_UNKNOWN`` for a call that started, ``TOOL_NOT_STARTED``
        for one that did not), and continues turn numbering and seqs. ``options`` and
        ``system`` default to the route and system prompt of the log's last
        ``request/header``. The first request logs a ``resume``
        header. Raises ``PersistenceNotConfiguredError`` without persistence and
        ``SessionPersistenceNotFoundError`` for an unknown id.
        """
        self._check_open(session_id)
        persistence = self._persistence
        if persistence is None:
            raise PersistenceNotConfiguredError(session_id, "resume")
        handle = await persistence.open(session_id, "write")
        try:
            events = list(await handle.read(0))
            closers = interrupted_turn_closers(events)  # the identified shape the loop writes
            if closers:
                await handle.append(closers)
            session = Session(
                handle.header,
                [*events, *closers],
                inherited_event_count=handle.inherited_event_count,
            )
            resolved = _options_from_log(session, options)
            return await self._attach(
                session,
                handle,
                resolved,
                _system_from_log(session, system),
                stored=len(session.events),
                source="resume",
            )
        except BaseException:
            await handle.close()
            raise

    async def fork(
        self,
        parent: str | LoopAgent,
        *,
        session_id: str | None = None,
        boundary: int | None = None,
        options: AgentOptions | None = None,
        system: str | None = None,
        cwd: str | None = None,
        origin: Literal["subagent"] | None = None,
        delegation_depth: int | None = None,
        agent_preset: str | None = None,
    ) -> LoopAgent:
        """A new agent whose session starts with the parent's log up to ``boundary`` (default:
        all of it), which must be a balanced point (``SessionForkError`` ``OPEN_TURN``).

        ``parent`` is a live agent or the id of one (live, else read from persistence). The
        child gets a new id, names the parent in its header (``parentSession``, the seed length
        as ``seedLength``), ends its seed with ``session/end-seed``, continues the parent's turn
        numbers, and logs a ``resume`` header on its first request. ``options``, ``system`` and
        ``cwd`` default to the parent's.
        """
        parent_agent = parent if isinstance(parent, LoopAgent) else self._agents.get(parent)
        parent_id = parent if isinstance(parent, str) else parent.id
        parent_system = system
        if parent_agent is not None:
            events: Sequence[SessionEvent] = list(parent_agent.session.events)
            parent_header = parent_agent.session.header
            parent_options: AgentOptions | None = parent_agent.options
            parent_system = system if system is not None else parent_agent.system
        else:
            events, parent_header = await self._read_stored(parent_id)
            parent_options = None
        seed, inherited = fork_seed(events, boundary)
        session_id = session_id if session_id is not None else str(uuid.uuid4())
        self._check_open(session_id)
        header = SessionHeader(
            id=session_id,
            created_at=time.time_ns() // 1_000_000,
            cwd=cwd if cwd is not None else parent_header.cwd,
            parent_session=parent_header.id,
            origin=origin,
            delegation_depth=0 if delegation_depth is None else delegation_depth,
            agent_preset=agent_preset if agent_preset is not None else parent_header.agent_preset,
            is_seeded=inherited > 0,
        )
        resolved = options if options is not None else parent_options
        if resolved is None or parent_agent is None:
            seeded = Session(header, seed, inherited_event_count=inherited)
            resolved = resolved if resolved is not None else _options_from_log(seeded, None)
            parent_system = _system_from_log(seeded, parent_system)
        return await self._start(
            header, seed, inherited, resolved, parent_system, stored=0, source="startup"
        )

    async def _read_stored(self, session_id: str) -> tuple[list[SessionEvent], SessionHeader]:
        persistence = self._persistence
        if persistence is None:
            raise PersistenceNotConfiguredError(session_id, "fork a session that is not live")
        async with await persistence.open(session_id, "read") as handle:
            return list(await handle.read(0)), handle.header

    async def _start(
        self,
        header: SessionHeader,
        seed: Sequence[SessionEvent],
        inherited: int,
        options: AgentOptions,
        system: str | None,
        *,
        stored: int,
        source: SessionStartSource,
    ) -> LoopAgent:
        session = Session(header, seed, inherited_event_count=inherited)
        handle: SessionHandle | None = None
        if self._persistence is not None:
            handle = await self._persistence.create(header, inherited_event_count=inherited)
        try:
            return await self._attach(
                session, handle, options, system, stored=stored, source=source
            )
        except BaseException:
            if handle is not None:
                await handle.close()
            raise

    async def _attach(
        self,
        session: Session,
        handle: SessionHandle | None,
        options: AgentOptions,
        system: str | None,
        *,
        stored: int,
        source: SessionStartSource,
    ) -> LoopAgent:
        """Set the agent up; only once ``session_start`` listeners are done does it join the
        loop and start routing events into ``handle``."""
        self._check_open(session.id)
        agent = LoopAgent(
            session=session,
            options=options,
            system=system,
            runtime=self._runtime,
            journal=None,
            on_closed=self._forget,
        )
        for listener in self._runtime.extensions.session_start:
            result = listener(agent, source)
            if inspect.isawaitable(result):
                await result
        self._check_open(session.id)
        if handle is not None:
            agent.attach_journal(Journal(session, handle, stored=stored))
        self._agents[session.id] = agent
        return agent

    def _forget(self, agent: LoopAgent) -> None:
        if self._agents.get(agent.id) is agent:
            del self._agents[agent.id]

    # -- closing ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close every agent (cancelling running turns, draining and closing their handles).
        Failures are raised together as an ``ExceptionGroup``."""
        self._closed = True
        agents = list(self._agents.values())
        results = await asyncio.gather(
            *(agent.aclose() for agent in agents), return_exceptions=True
        )
        failures = [result for result in results if isinstance(result, Exception)]
        if failures:
            raise ExceptionGroup("closing the agent loop failed", failures)

    async def __aenter__(self) -> AgentLoop:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
