"""Where a file tool's path points, and whether the session's sandbox lets it go there.

A path is resolved before any check: relative to the caller's session cwd, ``~`` expanded, every
symlink and ``..`` followed (``os.path.realpath``), so a link inside the workspace that points
outside is judged by where it points. The workspace itself is the session's pinned one when a
pin lookup is given: verified before every call (`dsh_shell.WorkspacePin.verify`), never
re-resolved, so a workspace re-pointed by a symlink refuses the call. The check is
`dsh_shell.SandboxPolicy.check`, the rule the sandboxed ``bash`` follows. Opening then
re-verifies that the descriptor is the checked file (``O_NOFOLLOW`` and the descriptor's own
path), so a symlink swapped in between is refused.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field, WithJsonSchema, model_validator

from dsh_session import logged_permissions
from dsh_shell import (
    ESCALATION_SCHEMA,
    JUSTIFICATION_DESCRIPTION,
    SANDBOX_PERMISSIONS_DESCRIPTION,
    Escalation,
    SandboxAccess,
    SandboxMode,
    SandboxPolicy,
    WorkspacePinLookup,
    escalation_pair_problem,
    not_widening_problem,
    retry_wider_hint,
    sandbox_denied_marker,
    sandbox_mode_from_log,
)
from dsh_shell import escalation_reason as shared_escalation_reason
from dsh_tool_fs._errors import SandboxDeniedError
from dsh_tools import InvalidToolArgumentsError, ToolExecution

__all__ = [
    "Confinement",
    "Escalation",
    "EscalationArgs",
    "escalation_reason",
    "open_verified",
    "resolve_path",
]

_OptionalEscalation = Annotated[Escalation | None, WithJsonSchema(ESCALATION_SCHEMA)]
_OptionalText = Annotated[str | None, WithJsonSchema({"type": "string"})]


class EscalationArgs(BaseModel):
    """The two parameters every file tool gains under a sandbox, given together."""

    sandbox_permissions: _OptionalEscalation = Field(
        default=None, description=SANDBOX_PERMISSIONS_DESCRIPTION
    )
    justification: _OptionalText = Field(default=None, description=JUSTIFICATION_DESCRIPTION)

    @model_validator(mode="after")
    def _together(self) -> EscalationArgs:
        problem = escalation_pair_problem(self.sandbox_permissions, self.justification)
        if problem is not None:
            raise ValueError(problem)
        return self


def _with_real(paths: tuple[Path, ...]) -> tuple[Path, ...]:
    """``paths`` and, where a symlink makes it differ, the real path of each."""
    return tuple(dict.fromkeys([*paths, *(Path(os.path.realpath(p)) for p in paths)]))


def _resolved_paths(policy: SandboxPolicy) -> dict[str, object]:
    """The policy's paths as the targets will be compared: resolved targets meet resolved
    rules, so a denied or read-only path that is itself a symlink (``~/.ssh`` into a dotfiles
    folder) still covers where it leads, as the sandboxed ``bash`` resolves them for its
    mounts. Denied and read-only rules keep both forms; a temp dir is taken at its real path."""
    changes: dict[str, object] = {
        "denied_paths": _with_real(policy.denied_paths),
        "read_only_paths": _with_real(policy.read_only_paths),
        "writable_roots": _with_real(policy.writable_roots),
    }
    if policy.temp_dir is not None:
        changes["temp_dir"] = Path(os.path.realpath(policy.temp_dir))
    if policy.workspace is not None:
        changes["workspace"] = Path(os.path.realpath(policy.workspace))
    return changes


def resolve_path(raw: str, base: Path, *, field: str = "file_path", tool: str = "read") -> Path:
    """``raw`` (as the model gave it) made absolute against ``base`` with every symlink and
    ``..`` resolved. A blank value or one holding NUL is an argument error naming ``field``."""
    if not raw.strip() or "\0" in raw:
        raise InvalidToolArgumentsError(tool, [f"{field}: a non-empty path without NUL"])
    path = Path(os.path.expanduser(raw))
    if not path.is_absolute():
        path = base / path
    return Path(os.path.realpath(path))


@dataclass(frozen=True, slots=True)
class Confinement:
    """The sandbox rule one call runs under: ``policy`` (``None``: unconfined) and the ``base``
    directory relative paths start from (the caller's session cwd)."""

    policy: SandboxPolicy | None
    base: Path

    @classmethod
    def for_call(
        cls,
        execution: ToolExecution,
        default: SandboxPolicy | None,
        requested: Escalation | None = None,
        *,
        pins: WorkspacePinLookup | None = None,
    ) -> Confinement:
        """The confinement of ``execution``: ``default`` in the mode the calling session
        logged last (``sandbox/mode``; none logged: the default's own), rooted at the caller's
        cwd, widened to ``requested`` once approved.

        With ``pins``, a session whose workspace is pinned has it verified first (a
        `dsh_shell.WorkspaceChangedError` refuses the call, closed, whatever the mode) and
        keeps the pinned path as its workspace, never what the cwd resolves to now."""
        cwd = execution.caller.cwd if execution.caller is not None else None
        base = Path(cwd) if cwd is not None else Path.cwd()
        if default is None:
            return cls(None, base)
        policy = default
        caller = execution.caller
        mode = sandbox_mode_from_log(
            logged_permissions(caller.session).sandbox_mode if caller else None
        )
        changes: dict[str, object] = {}
        if mode is not None and mode != policy.mode:
            changes["mode"] = mode
        session = execution.session_id
        pin = pins(session) if pins is not None and session is not None else None
        if pin is not None and (mode or policy.mode) != "danger-full-access":
            pin.verify(session_id=session)
        changes |= _resolved_paths(policy)
        if pin is not None and policy.workspace in (None, pin.path):
            changes["workspace"] = pin.path
        elif policy.workspace is None:
            changes["workspace"] = Path(os.path.realpath(base))
        policy = dataclasses.replace(policy, **changes)  # type: ignore[arg-type]
        if requested is not None:
            policy = policy.widened(requested)
        return cls(policy, base)

    @property
    def mode(self) -> SandboxMode:
        """The mode in force (``danger-full-access`` when unconfined)."""
        return "danger-full-access" if self.policy is None else self.policy.mode

    def check(self, path: Path, access: SandboxAccess, *, shown: str) -> None:
        """Refuse (`SandboxDeniedError` naming ``shown`` and the rule) unless allowed."""
        if self.policy is None:
            return
        decision = self.policy.check(path, access)
        if decision.allowed:
            return
        mode = self.policy.mode
        raise SandboxDeniedError(
            f"the sandbox refuses to {access} {shown} ({decision.reason}) "
            f"{sandbox_denied_marker(mode)} {retry_wider_hint(mode, 'call', 'it')}",
            path=str(path),
        )


def escalation_reason(
    tool: str, requested: Escalation | None, justification: str | None, current: SandboxMode
) -> str | None:
    """The approval reason of an escalated call (``None`` without one); a request that does
    not widen ``current`` is an argument error."""
    if requested is None:
        return None
    problem = not_widening_problem(requested, current)
    if problem is not None:
        raise InvalidToolArgumentsError(tool, [problem])
    return shared_escalation_reason(requested, justification)


def open_verified(path: Path, flags: int, mode: int = 0o666, *, dir_fd: int | None = None) -> int:
    """``os.open`` that refuses a final symlink and, where ``/proc`` says so, a descriptor whose
    real path is not ``path`` (a component swapped for a link after the check)."""
    fd = os.open(
        path if dir_fd is None else path.name,
        flags | os.O_NOFOLLOW | os.O_CLOEXEC,
        mode,
        dir_fd=dir_fd,
    )
    try:
        actual = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return fd  # no /proc: O_NOFOLLOW is the guard
    if actual != str(path):
        os.close(fd)
        raise SandboxDeniedError(
            f"{path} changed while it was opened (it now leads to {actual}); refused",
            path=str(path),
        )
    return fd
