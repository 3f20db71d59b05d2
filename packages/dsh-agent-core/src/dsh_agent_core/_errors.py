"""The agent core's errors: one base, ``DshError``, each naming the key, file or session."""

from __future__ import annotations

from dsh_agent import AgentClosedError

__all__ = [
    "ChildWorkspaceError",
    "ConfigError",
    "DshError",
    "HarnessClosedError",
    "HomeConflictError",
    "MissingExtraError",
    "SandboxUnavailableError",
    "UnknownPresetError",
]


class DshError(Exception):
    """Base of the agent core's errors; the message is one line a shell user can act on."""


class HarnessClosedError(DshError, AgentClosedError):
    """The harness was closed; it starts no more agents (the agent seam's closed error)."""

    def __init__(self) -> None:
        super().__init__("the harness is closed; it starts no more agents")


class ConfigError(DshError):
    """The configuration is invalid: ``key`` names where (file and key), ``reason`` what."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"config {key}: {reason}")
        self.key = key
        self.reason = reason


class HomeConflictError(ConfigError):
    """``dsh_home`` and ``skills.local.dsh_home`` resolve to different directories."""

    def __init__(self, top: str, skills: str) -> None:
        super().__init__(
            "skills.local.dsh_home",
            f"resolves to {skills}, but dsh_home resolves to {top}; set one of them, or the "
            "same directory in both",
        )
        self.top = top
        self.skills = skills


class MissingExtraError(DshError):
    """The configuration asks for a part that comes with an extra of dsh-agent-core that is not
    installed: ``part`` names what was asked for (``persistence backend "postgres"``, ``MCP
    server "github"``), ``extra`` the extra that brings it (``postgres``, ``mcp``, ``acp``).
    ``by_config=False``: the part is asked for by a command (``dsh acp``), not the config."""

    def __init__(self, part: str, extra: str, *, by_config: bool = True) -> None:
        asked = f"the config's {part}" if by_config else part
        super().__init__(
            f"{asked} needs dsh-agent-core[{extra}]: pip install 'dsh-agent-core[{extra}]'"
        )
        self.part = part
        self.extra = extra


class SandboxUnavailableError(DshError):
    """``mode`` confines commands but bubblewrap cannot run here (``cause``; ``fix`` says what
    to do): refused before any session exists, so a confined command never runs unconfined."""

    def __init__(self, mode: str, cause: str, fix: str) -> None:
        super().__init__(f"the {mode} sandbox cannot run here: {cause}; fix: {fix}")
        self.mode = mode
        self.cause = cause
        self.fix = fix


class UnknownPresetError(ConfigError):
    """A preset name the configuration does not define."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(
            f"presets.{name}", f"no such preset (defined: {', '.join(known) or 'none'})"
        )
        self.name = name


class ChildWorkspaceError(DshError):
    """A child session was asked for a ``cwd`` outside its parent's writable area (outside the
    parent's workspace and writable roots, or under a protected name such as ``.git`` in them),
    and the widening was not approved: no child was created.

    ``session_id`` is the parent, ``cwd`` the requested directory (resolved), ``workspace`` the
    parent's workspace, ``reason`` the parent's sandbox rule that refuses writing there and
    ``outcome`` the approval's (``None``: not asked).
    """

    def __init__(
        self,
        session_id: str,
        cwd: str,
        workspace: str,
        reason: str,
        outcome: str | None = None,
    ) -> None:
        asked = (
            "; a wider workspace needs approval"
            if outcome is None
            else f"; the approval to widen it was {outcome}"
        )
        super().__init__(
            f"session {session_id!r} may not start a child in {cwd!r}: it lies outside the "
            f"writable area of its workspace {workspace!r} ({reason}){asked}. A child is never "
            "confined less than its parent: give a cwd inside the workspace, or none"
        )
        self.session_id = session_id
        self.cwd = cwd
        self.workspace = workspace
        self.reason = reason
        self.outcome = outcome
