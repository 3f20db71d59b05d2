"""Delegation and permission policy of new sessions: a session starts with the configured
sandbox mode and approval policy, and a ``session_create`` child inherits its parent's cwd,
model and preset and is never confined less than its parent (its mode, never asking, a cwd
the parent may write, a bounded depth)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from dsh_agent_core._config import Config
from dsh_agent_core._errors import ChildWorkspaceError, DshError
from dsh_agent_core._permissions import logged_sandbox_mode, pin_permissions
from dsh_agent_core._workspace_pins import WorkspacePins
from dsh_agent_loop import LoopAgent
from dsh_shell import SandboxMode, SandboxPolicy

__all__ = ["ChildStart", "Delegation", "canonical_cwd"]


def canonical_cwd(cwd: str | os.PathLike[str]) -> str:
    """``cwd``'s real path; raises :class:`DshError` when it is not a directory."""
    path = os.path.realpath(os.fspath(cwd))
    if not os.path.isdir(path):
        raise DshError(f"cwd {os.fspath(cwd)!r} is not a directory")
    return path


@dataclass(frozen=True, slots=True)
class ChildStart:
    """What a child starts with: the preset, route, reasoning effort and cwd asked for, or its
    parent's where none was."""

    preset: str | None
    model: str | None
    reasoning_effort: str | None
    cwd: str | os.PathLike[str] | None


class Delegation:
    """The permission policy of one harness's new sessions, and what its children inherit.
    ``policy`` is the harness's sandbox policy, ``pins`` its sessions' pinned workspaces."""

    def __init__(self, config: Config, policy: SandboxPolicy, pins: WorkspacePins) -> None:
        self._config = config
        self._policy = policy
        self._pins = pins

    def mode_of(self, agent: LoopAgent) -> SandboxMode:
        """``agent``'s sandbox mode: its logged one, else the configured one."""
        return logged_sandbox_mode(agent.session) or self._config.sandbox.mode

    def inherit(
        self,
        parent: LoopAgent,
        *,
        preset: str | None,
        model: str | None,
        reasoning_effort: str | None,
        cwd: str | os.PathLike[str] | None,
    ) -> ChildStart:
        """A child of ``parent`` inherits its preset, its route (with its reasoning effort)
        and its cwd unless given; a relative ``cwd`` is relative to the parent's."""
        if preset is None:
            preset = parent.session.header.agent_preset
        if model is None:
            model = f"{parent.options.provider}:{parent.options.model}"
            reasoning_effort = reasoning_effort or parent.options.reasoning_effort
        if cwd is None:
            cwd = parent.cwd
        elif parent.cwd is not None and not os.path.isabs(os.fspath(cwd)):
            cwd = os.path.join(parent.cwd, os.fspath(cwd))
        return ChildStart(preset, model, reasoning_effort, cwd)

    def check_cwd(self, parent: LoopAgent, cwd: str) -> None:
        """Raise `ChildWorkspaceError` unless ``cwd`` lies inside one of ``parent``'s writable
        roots (its pinned workspace, the configured writable roots) with no protected name
        (``.git``) between the root and it, so the child's writable area (its cwd subtree, the
        same writable roots, a private temp directory; the same read-only and denied paths)
        stays within the parent's. A ``read-only`` parent's child is read-only too, but its
        workspace stays inside the parent's all the same; no limit under full access."""
        if self.mode_of(parent) == "danger-full-access":
            return
        pin = self._pins.get(parent.id)
        if pin is not None:
            pin.verify(session_id=parent.id)
            workspace = pin.path
        else:
            workspace = Path(os.path.realpath(parent.cwd if parent.cwd is not None else "."))
        area = dataclasses.replace(
            self._policy,
            mode="workspace-write",
            workspace=workspace,
            writable_roots=tuple(Path(os.path.realpath(p)) for p in self._policy.writable_roots),
            read_only_paths=(),  # the child has the same ones: they never widen it
            denied_paths=(),
        )
        decision = area.check(cwd, "write")
        if not decision.allowed:
            raise ChildWorkspaceError(parent.id, cwd, str(workspace), decision.reason)

    def depth(self, parent: LoopAgent) -> int:
        """The delegation depth of a child of ``parent``; raises :class:`DshError` when it
        would pass ``max_delegation_depth``."""
        depth = (parent.session.header.delegation_depth or 0) + 1
        if depth > self._config.max_delegation_depth:
            raise DshError(
                f"session {parent.id!r} is at delegation depth {depth - 1}; a child would "
                f"pass max_delegation_depth = {self._config.max_delegation_depth}"
            )
        return depth

    def pin_permissions(self, agent: LoopAgent, parent: LoopAgent | None) -> None:
        """Log a new session's sandbox mode and approval policy: the configured ones, or for a
        child its parent's mode and ``never`` (a child never asks)."""
        if parent is not None:
            pin_permissions(agent.session, self.mode_of(parent), "never", delegated=True)
        else:
            sandbox = self._config.sandbox
            pin_permissions(agent.session, sandbox.mode, sandbox.approval_policy)
