"""The session tools agents get: ``session_status`` (inspection only) and ``session_create``."""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dsh_agent_core._errors import ChildWorkspaceError
from dsh_agent_core._status import SessionStatusRow
from dsh_agent_loop import LoopAgent
from dsh_tools import ToolDefinition, ToolError, ToolExecution

__all__ = [
    "ChildWorkspaceRefusedError",
    "ModelChoice",
    "SessionCreateArgs",
    "SessionCreateTool",
    "SessionHost",
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


class SessionStatusArgs(BaseModel):
    """``{recent_n?}`` (default 50 most recently updated) or ``{session_id}`` (exact)."""

    model_config = ConfigDict(extra="forbid")

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
        "List DSH sessions (default: the 50 most recently updated) or look one up by "
        "session_id. Each row has session_id, title, status (running, idle, cold or missing), "
        "updated_at and, when the log is a plain file, session_path: an absolute path to the "
        "session's JSONL log, which you can read or search with your usual tools (rg, jq). "
        "Use the path as given; do not build log paths yourself. Inspection only."
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

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    reasoning_effort: str | None = Field(default=None, alias="reasoningEffort")


class SessionCreateArgs(BaseModel):
    """``{prompt, preset?, model?, cwd?}``."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(min_length=1)
    preset: str | None = None
    model: ModelChoice | None = None
    cwd: str | None = None


class ChildWorkspaceRefusedError(ToolError):
    """``session_create``'s error result for a ``cwd`` outside the caller's writable area whose
    widening was not approved (``SESSION_CWD_OUTSIDE_WORKSPACE``, named ``ChildWorkspaceError``);
    the message names the cwd, the caller's workspace and the approval's outcome."""

    default_code: ClassVar[str] = "SESSION_CWD_OUTSIDE_WORKSPACE"
    info_name: ClassVar[str | None] = "ChildWorkspaceError"


class SessionCreateTool(ToolDefinition[SessionCreateArgs]):
    """Starts a fresh agent on a prompt and returns once the prompt is accepted.

    A child is never confined less than its caller: a ``cwd`` the caller may not write (outside
    its workspace and writable roots, or under a protected path) is an escalation. It is asked
    through the caller's approval seam (``approval/asked``/``approval/decided``, with the cwd
    and the workspace in the reason); unless allowed once, the call fails with
    `ChildWorkspaceRefusedError` and no child is created.
    """

    name = "session_create"
    description = (
        "Start a new DSH session (a separate agent) working on `prompt`, and return its "
        "session_id and session_path at once; it runs on its own. It inherits your working "
        "directory, model and preset unless you give cwd, model ({provider, model}) or preset. "
        "It runs in your sandbox mode; a cwd must lie inside your workspace (a relative one is "
        "relative to it); one outside needs the user's approval. Follow it with "
        "session_status."
    )
    parameters = SessionCreateArgs

    def __init__(self, harness: SessionHost) -> None:
        self._harness = harness

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
        result: dict[str, Any] = {"session_id": agent.id, "status": row.status}
        if row.session_path is not None:
            result["session_path"] = row.session_path
        return json.dumps(result, ensure_ascii=False)
