"""Each session's workspace, pinned by real path and device/inode when it starts or resumes,
so a confined call refuses, closed, once the workspace resolves elsewhere."""

from __future__ import annotations

from dsh_agent import Agent, SessionStartSource
from dsh_agent_core._permissions import logged_sandbox_mode
from dsh_shell import SandboxMode, ShellValueError, WorkspaceChangedError, WorkspacePin

__all__ = ["WorkspacePins"]


class WorkspacePins:
    """The pins of the sessions started or resumed in one harness. `pin` is a
    ``session_start`` listener; `get` is what the sandbox and the file tools ask before every
    confined call. ``default_mode``: the configured sandbox mode, for a session that logged
    none."""

    def __init__(self, default_mode: SandboxMode) -> None:
        self._default_mode = default_mode
        self._pins: dict[str, WorkspacePin] = {}
        self._unpinned: dict[str, WorkspaceChangedError] = {}

    def get(self, session_id: str) -> WorkspacePin | None:
        """The workspace ``session_id`` pinned when it started or resumed here (``None``: not
        a session of this harness, or one without a cwd). Raises
        `dsh_shell.WorkspaceChangedError` for a session that runs unconfined and whose cwd
        could not be pinned: a confined call of it fails."""
        refused = self._unpinned.get(session_id)
        if refused is not None:
            raise refused
        return self._pins.get(session_id)

    def pin(self, agent: Agent, source: SessionStartSource) -> None:
        """Pin ``agent``'s cwd (a ``session_start`` listener: startup and resume).

        The logged cwd must still be its own real path (a new session's is canonicalized just
        before): at resume, a cwd that now resolves elsewhere (a folder swapped for a symlink,
        or moved and linked back) refuses the resume of a confined session with
        `dsh_shell.WorkspaceChangedError`, rather than confining it to wherever the link now
        leads. An unconfined (``danger-full-access``) session still starts; a confined call
        it makes later (its mode changed) is refused."""
        self._pins.pop(agent.id, None)
        self._unpinned.pop(agent.id, None)
        cwd = agent.cwd
        if cwd is None:
            return
        try:
            self._pins[agent.id] = WorkspacePin.of(cwd, session_id=agent.id)
        except (WorkspaceChangedError, ShellValueError) as error:
            refused = (
                error
                if isinstance(error, WorkspaceChangedError)
                else WorkspaceChangedError(cwd, "is not an absolute path", agent.id)
            )
            mode = logged_sandbox_mode(agent.session) or self._default_mode
            if mode != "danger-full-access":
                raise refused from None
            self._unpinned[agent.id] = refused
