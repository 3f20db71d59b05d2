"""The session tools agents get: ``session_status`` (inspection only), ``session_create``
and ``session_result``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dsh_agent import CancelCause
from dsh_agent_core._errors import ChildWorkspaceError
from dsh_agent_core._status import SessionStatusRow
from dsh_agent_loop import LoopAgent
from dsh_session import SessionEvent, message_parts
from dsh_tools import ToolDefinition, ToolError, ToolExecution

__all__ = [
    "ChildFailedError",
    "ChildWorkspaceRefusedError",
    "ModelChoice",
    "SessionCreateArgs",
    "SessionCreateTool",
    "SessionHost",
    "SessionResultArgs",
    "SessionResultTool",
    "SessionStatusArgs",
    "SessionStatusTool",
]


class SessionHost(Protocol):
    """What the session tools need of the harness that owns them (``Harness`` is one); the
    tools take it as given, so this module does not import the harness that builds them."""

    async def status_of(self, session_id: str) -> SessionStatusRow:
        """The row of one session (``missing`` when neither live nor stored)."""
        ...

    async def status(self, recent_n: int = 50) -> list[SessionStatusRow]:
        """The ``recent_n`` most recently updated sessions, live ones merged in."""
        ...

    def get(self, session_id: str) -> LoopAgent | None:
        """The live agent of ``session_id``, if any."""
        ...

    async def session_events(self, session_id: str) -> Sequence[SessionEvent] | None:
        """The events of ``session_id`` (live or stored; ``None`` when neither)."""
        ...

    async def create(
        self,
        prompt: str | None = None,
        *,
        preset: str | None = None,
        model: str | None = None,
        reasoning_effort: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        parent: LoopAgent | None = None,
        cwd_approved: bool = False,
    ) -> LoopAgent:
        """A new agent with ``prompt`` queued (a child of ``parent`` when given). A child's
        ``cwd`` its parent may not write raises `ChildWorkspaceError` before anything is
        created, unless ``cwd_approved``."""
        ...


def _model_facing(schema: dict[str, Any]) -> None:
    """Drop what only costs the model tokens: the class docstring and the per-property titles
    (the tool's description says what the parameters mean)."""
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)


_ARGS_CONFIG = ConfigDict(extra="forbid", json_schema_extra=_model_facing)


class SessionStatusArgs(BaseModel):
    """``{recent_n?}`` (default 50 most recently updated) or ``{session_id}`` (exact)."""

    model_config = _ARGS_CONFIG

    recent_n: int | None = Field(default=None, ge=1, le=1000)
    session_id: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_form(self) -> SessionStatusArgs:
        if self.recent_n is not None and self.session_id is not None:
            raise ValueError("give recent_n or session_id, not both")
        return self


class SessionStatusTool(ToolDefinition[SessionStatusArgs]):
    """Lists sessions with their status and log path; never resumes, calls a model or writes."""

    name = "session_status"
    description = (
        "List sessions (default: the 50 most recent) or one by session_id: status (running, "
        "idle, cold, missing), title, and session_path, its JSONL log to read or search (use "
        "it as given)."
    )
    parameters = SessionStatusArgs

    def __init__(self, harness: SessionHost) -> None:
        self._harness = harness

    def is_concurrency_safe(self, args: SessionStatusArgs) -> bool:
        """Reading status is safe alongside other calls."""
        return True

    async def execute(self, args: SessionStatusArgs, execution: ToolExecution) -> str:
        """The rows as JSON."""
        if args.session_id is not None:
            rows = [await self._harness.status_of(args.session_id)]
        else:
            rows = await self._harness.status(args.recent_n or 50)
        return json.dumps([row.to_json() for row in rows], ensure_ascii=False, indent=1)


class ModelChoice(BaseModel):
    """``{provider, model, reasoningEffort?}``."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, json_schema_extra=_model_facing
    )

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    reasoning_effort: str | None = Field(default=None, alias="reasoningEffort")


class SessionCreateArgs(BaseModel):
    """``{prompt, preset?, model?, cwd?, background?}`` (``background`` default false: wait
    for the child's answer)."""

    model_config = _ARGS_CONFIG

    prompt: str = Field(min_length=1)
    preset: str | None = None
    model: ModelChoice | None = None
    cwd: str | None = None
    background: bool = False


class ChildFailedError(ToolError):
    """The error result of a child whose turn did not complete: it failed
    (``SESSION_CHILD_FAILED``), was cancelled (``SESSION_CHILD_CANCELLED``) or was blocked by a
    hook (``SESSION_CHILD_BLOCKED``). The message names the child session, its log and why."""

    default_code: ClassVar[str] = "SESSION_CHILD_FAILED"


def _describe(session_id: str, session_path: str | None) -> str:
    where = f" (log: {session_path})" if session_path is not None else ""
    return f"child session {session_id}{where}"


def _data(event: SessionEvent) -> dict[str, Any]:
    data = event.to_wire().get("data")
    return data if isinstance(data, dict) else {}


def _turn_end(events: Sequence[SessionEvent], turn: int | None = None) -> SessionEvent | None:
    """The ``turn/end`` of ``turn`` (default: the last one) in ``events``."""
    for event in reversed(events):
        if event.type == "turn/end" and (turn is None or _data(event).get("turn") == turn):
            return event
    return None


def _final_text(events: Sequence[SessionEvent], turn: int) -> str:
    """The text of the last complete assistant message of ``turn``."""
    for event in reversed(events):
        if event.type != "assistant/message":
            continue
        data = _data(event)
        if data.get("turn") != turn or data.get("interrupted"):
            continue
        parts = message_parts(event.type, data)  # either message shape
        blocks = [] if parts is None else parts.content
        return "".join(
            b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _outcome(
    events: Sequence[SessionEvent], end: SessionEvent, session_id: str, path: str | None
) -> str:
    """The tool result of a child turn that ended with ``end``: its final answer, or raises
    `ChildFailedError` saying why there is none."""
    turn = _data(end).get("turn")
    reason = _data(end).get("reason") or {}
    kind = reason.get("kind")
    who = _describe(session_id, path)
    if kind in ("completed", "max-tokens"):
        text = _final_text(events, turn) if isinstance(turn, int) else ""
        cut = " (its answer was cut off at its token limit)" if kind == "max-tokens" else ""
        return f"{who} finished{cut}. Its final answer:\n\n{text}"
    if kind == "aborted":
        cause = (reason.get("reason") or {}).get("kind", "user")
        raise ChildFailedError(
            f"{who} was cancelled ({cause}) before it answered; resume it with "
            f"dsh run --resume {session_id}",
            code="SESSION_CHILD_CANCELLED",
        )
    if kind == "blocked":
        raise ChildFailedError(
            f"{who} was blocked by a hook before it answered", code="SESSION_CHILD_BLOCKED"
        )
    if kind == "interrupted":
        raise ChildFailedError(
            f"{who} was interrupted (its process ended) before it answered; resume it with "
            f"dsh run --resume {session_id}",
            code="SESSION_CHILD_CANCELLED",
        )
    error = reason.get("error") or {}
    detail = error.get("message") or json.dumps(reason, ensure_ascii=False)
    code = f" [{error['code']}]" if error.get("code") else ""
    raise ChildFailedError(f"{who} failed{code}: {detail}")


async def _first_turn_end(agent: LoopAgent) -> SessionEvent | None:
    """Wait for the ``turn/end`` of ``agent``'s first turn (``None``: it went idle or closed
    without one)."""
    session = agent.session
    ended: asyncio.Future[SessionEvent] = asyncio.get_running_loop().create_future()

    def seen(event: SessionEvent) -> None:
        if event.type == "turn/end" and not ended.done():
            ended.set_result(event)

    subscription = session.subscribe(seen)
    try:
        found = _turn_end(session.events)
        if found is not None:
            return found
        idle: asyncio.Future[Any] = asyncio.ensure_future(agent.wait_idle())
        waiting: list[asyncio.Future[Any]] = [ended, idle]
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            idle.cancel()
        return ended.result() if ended.done() else None
    finally:
        subscription.close()


class ChildWorkspaceRefusedError(ToolError):
    """``session_create``'s error result for a ``cwd`` outside the caller's writable area whose
    widening was not approved (``SESSION_CWD_OUTSIDE_WORKSPACE``, named ``ChildWorkspaceError``);
    the message names the cwd, the caller's workspace and the approval's outcome."""

    default_code: ClassVar[str] = "SESSION_CWD_OUTSIDE_WORKSPACE"
    info_name: ClassVar[str | None] = "ChildWorkspaceError"


class SessionCreateTool(ToolDefinition[SessionCreateArgs]):
    """Starts a fresh agent on a prompt and, by default, waits for its answer (Claude Code's
    Task tool): the result names the child session and its log, then gives the child's final
    assistant text (a long one is spilled like any tool result). A child whose turn failed, was
    cancelled or was blocked gives a `ChildFailedError` result saying so. Cancelling the
    caller's turn cancels the waiting child (cause ``parent``), whose log keeps the interrupted
    turn and can be resumed. With ``background: true`` it returns once the prompt is accepted
    (``{session_id, status, session_path?}``); `SessionResultTool` collects the answer.

    A child is never confined less than its caller: a ``cwd`` the caller may not write (outside
    its workspace and writable roots, or under a protected path) is an escalation. It is asked
    through the caller's approval seam (``approval/asked``/``approval/decided``, with the cwd
    and the workspace in the reason); unless allowed once, the call fails with
    `ChildWorkspaceRefusedError` and no child is created.
    """

    name = "session_create"
    description = (
        "Start a subagent in a new session on `prompt`: a self-contained task, saying what "
        "the answer must contain. Waits and returns its answer, session_id and log path; with "
        "background: true returns at once (collect it with session_result). It inherits your "
        "cwd, model, preset and sandbox unless given; a cwd outside your workspace needs the "
        "user's approval."
    )
    parameters = SessionCreateArgs

    def __init__(self, harness: SessionHost) -> None:
        self._harness = harness

    def is_concurrency_safe(self, args: SessionCreateArgs) -> bool:
        """Children in the caller's own cwd run side by side (several calls in one answer
        wait for their children together); a call with a ``cwd`` may ask for approval, so it
        runs alone."""
        return args.cwd is None

    async def execute(self, args: SessionCreateArgs, execution: ToolExecution) -> str:
        """Create the agent, queue the prompt, report the new session."""
        caller = execution.caller
        parent = caller if isinstance(caller, LoopAgent) else None
        route = None
        reasoning = None
        if args.model is not None:
            route = f"{args.model.provider}:{args.model.model}"
            reasoning = args.model.reasoning_effort
        approved = False
        while True:
            try:
                agent = await self._harness.create(
                    args.prompt,
                    preset=args.preset,
                    model=route,
                    reasoning_effort=reasoning,
                    cwd=args.cwd,
                    parent=parent,
                    cwd_approved=approved,
                )
                break
            except ChildWorkspaceError as refused:
                if approved or parent is None:
                    raise ChildWorkspaceRefusedError(str(refused)) from refused
                outcome = await parent.request_approval(
                    self.name,
                    call_id=execution.call_id,
                    reason=(
                        f"start a child session in {refused.cwd}, outside the writable area "
                        f"of the workspace {refused.workspace} ({refused.reason})"
                    ),
                    arguments=execution.arguments,
                )
                if outcome != "allowed-once":
                    denied = ChildWorkspaceError(
                        refused.session_id,
                        refused.cwd,
                        refused.workspace,
                        refused.reason,
                        outcome,
                    )
                    raise ChildWorkspaceRefusedError(str(denied)) from refused
                approved = True
            except ToolError:
                raise
            except Exception as error:
                raise ToolError(str(error), code="SESSION_CREATE_FAILED") from error
        row = await self._harness.status_of(agent.id)
        if not args.background:
            return await self._wait(agent, row.session_path)
        result: dict[str, Any] = {"session_id": agent.id, "status": row.status}
        if row.session_path is not None:
            result["session_path"] = row.session_path
        return json.dumps(result, ensure_ascii=False)

    async def _wait(self, child: LoopAgent, path: str | None) -> str:
        """The child's answer once its first turn ends; a cancel of the caller cancels it."""
        try:
            end = await _first_turn_end(child)
        except asyncio.CancelledError:
            child.cancel(CancelCause("parent"))
            with contextlib.suppress(Exception):
                await asyncio.shield(child.wait_idle())
            raise
        if end is None:
            raise ChildFailedError(
                f"{_describe(child.id, path)} ended without running its turn (it was closed)",
                code="SESSION_CHILD_CANCELLED",
            )
        return _outcome(child.session.events, end, child.id, path)


class SessionResultArgs(BaseModel):
    """``{session_id}``."""

    model_config = _ARGS_CONFIG

    session_id: str = Field(min_length=1)


class SessionResultTool(ToolDefinition[SessionResultArgs]):
    """A session's latest answer: for a ``session_create`` child started with ``background:
    true``, ``{session_id, status: "running", session_path?}`` while its turn runs, then its
    final assistant text as the waiting form returns it (or a `ChildFailedError` result saying
    why there is none). Never resumes, calls a model or writes."""

    name = "session_result"
    description = (
        "A session's final answer (e.g. a background session_create child), or its status "
        "while it runs. Never waits."
    )
    parameters = SessionResultArgs

    def __init__(self, harness: SessionHost) -> None:
        self._harness = harness

    def is_concurrency_safe(self, args: SessionResultArgs) -> bool:
        """Reading a result is safe alongside other calls."""
        return True

    async def execute(self, args: SessionResultArgs, execution: ToolExecution) -> str:
        """The status while running, else the last turn's answer."""
        row = await self._harness.status_of(args.session_id)
        if row.status == "missing":
            raise ToolError(
                f"no session {args.session_id!r} (neither live nor stored)",
                code="SESSION_NOT_FOUND",
            )
        if row.status == "running":
            running: dict[str, Any] = {"session_id": args.session_id, "status": "running"}
            if row.session_path is not None:
                running["session_path"] = row.session_path
            return json.dumps(running, ensure_ascii=False)
        events = await self._harness.session_events(args.session_id) or ()
        end = _turn_end(events)
        who = _describe(args.session_id, row.session_path)
        if end is None:
            raise ToolError(f"{who} has not run a turn yet", code="SESSION_NO_RESULT")
        return _outcome(events, end, args.session_id, row.session_path)
