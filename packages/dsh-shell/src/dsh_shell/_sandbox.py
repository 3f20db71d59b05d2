"""`SandboxPolicy`: what a confined command (or a file tool) may read and write, as data.

The policy is pure and lexical: it never touches the filesystem. A caller that checks a real
path resolves symlinks first (``Path.resolve()``) and then asks `SandboxPolicy.check`; a
confining executor turns the same fields into mounts.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeAlias, get_args

from dsh_shell._errors import ShellValueError

SandboxMode: TypeAlias = Literal["read-only", "workspace-write", "danger-full-access"]
"""The sandbox modes, as the TypeScript harness and Codex name them."""

SANDBOX_MODES: Final[tuple[SandboxMode, ...]] = get_args(SandboxMode)
"""Every `SandboxMode`, from the narrowest (``read-only``) to the widest (no sandbox)."""

SandboxAccess: TypeAlias = Literal["read", "write"]
"""What `SandboxPolicy.check` is asked about."""

_ACCESSES: Final[tuple[SandboxAccess, ...]] = get_args(SandboxAccess)

DEFAULT_PROTECTED_NAMES: Final[tuple[str, ...]] = (".git", ".dsh", ".claude", ".codex")
"""Path components that stay read-only inside every writable root: the repository (its hooks
and config run code), the DSH home, and the Claude Code and Codex folders (their hook scripts
and settings run unconfined)."""

DEFAULT_DENIED_READ: Final[tuple[str, ...]] = (
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gh",
    "~/.netrc",
    "~/.git-credentials",
    "~/.docker/config.json",
    "~/.kube",
    "~/.azure",
    "~/.config/gcloud",
    "~/.pgpass",
    "~/.pypirc",
)
"""The usual credential locations (as ``~/...``), neither readable nor writable when confined."""


def sandbox_widens(current: SandboxMode, requested: SandboxMode) -> bool:
    """True only when ``requested`` is a strictly wider mode than ``current``.

    The ladder is `SANDBOX_MODES`: ``read-only`` < ``workspace-write`` < ``danger-full-access``.
    An unknown mode on either side raises `ShellValueError` naming it.
    """
    return _mode_rank("current", current) < _mode_rank("requested", requested)


def sandbox_mode_from_log(value: str | None) -> SandboxMode | None:
    """A sandbox mode as a session log holds it (``dsh_session.logged_permissions``), read
    fail closed: ``None`` stays ``None`` (none logged), a value outside `SANDBOX_MODES` reads
    as the narrowest mode, ``read-only``."""
    if value is None:
        return None
    return next((mode for mode in SANDBOX_MODES if mode == value), SANDBOX_MODES[0])


def sandbox_denied_marker(mode: SandboxMode) -> str:
    """The model-facing marker of a file effect the sandbox refused under ``mode``."""
    _mode_rank("mode", mode)
    return f"[sandbox: file access denied under {mode} mode]"


def default_denied_paths(home: Path | None = None) -> tuple[Path, ...]:
    """`DEFAULT_DENIED_READ` expanded against ``home`` (default: ``Path.home()``), absolute."""
    base = Path(home) if home is not None else Path.home()
    if not base.is_absolute():
        raise ShellValueError("home", home, "an absolute path")
    return tuple(Path(os.path.normpath(base / entry[2:])) for entry in DEFAULT_DENIED_READ)


@dataclass(frozen=True, slots=True)
class SandboxDecision:
    """The answer of `SandboxPolicy.check`; ``reason`` names the rule and the path."""

    allowed: bool
    reason: str


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """What a confined command may read and write; the same rules for shells and file tools.

    - ``mode``: ``read-only``, ``workspace-write`` (default) or ``danger-full-access`` (no
      confinement at all; every other field is then ignored);
    - ``workspace``: the session cwd, absolute (canonicalized by whoever builds the policy);
    - ``writable_roots``: extra writable directories, by configuration;
    - ``temp_dir``: the per-session ``$TMPDIR``; writable in **both** confined modes: it is a
      private scratch directory, not a user file (bash here-documents and most tools need one),
      so ``read-only`` still refuses every write to the user's files;
    - ``read_only_paths``: readable, never writable, even inside a writable root (the DSH home);
    - ``protected_names``: path components (``.git``, ``.dsh``) that stay read-only inside a
      writable root, at any depth below it;
    - ``protected_paths``: paths that stay read-only whether or not they exist yet (the
      programs and scripts configured hooks run, which run unconfined): absolute, or relative
      to ``workspace`` (no ``..``);
    - ``denied_paths``: neither readable nor writable (composition passes
      `default_denied_paths`);
    - ``network``: whether a confined command may use the network (off by default).

    Construction validates (an unknown mode, a relative path, a malformed name raise
    `ShellValueError` naming the field) and normalizes every path lexically
    (``os.path.normpath``; no filesystem access).
    """

    mode: SandboxMode = "workspace-write"
    workspace: Path | None = None
    writable_roots: tuple[Path, ...] = ()
    temp_dir: Path | None = None
    read_only_paths: tuple[Path, ...] = ()
    protected_names: tuple[str, ...] = DEFAULT_PROTECTED_NAMES
    denied_paths: tuple[Path, ...] = ()
    network: bool = False
    protected_paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _mode_rank("mode", self.mode)
        for name in ("workspace", "temp_dir"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _absolute(name, value))
        for name in ("writable_roots", "read_only_paths", "denied_paths"):
            object.__setattr__(self, name, _absolute_paths(name, getattr(self, name)))
        names: object = self.protected_names
        if isinstance(names, str) or not isinstance(names, tuple | list):
            raise ShellValueError("protected_names", names, "a tuple of path components")
        for index, item in enumerate(names):
            if not isinstance(item, str) or item in ("", ".", "..") or "/" in item or "\0" in item:
                raise ShellValueError(f"protected_names[{index}]", item, "a single path component")
        object.__setattr__(self, "protected_names", tuple(names))
        object.__setattr__(self, "protected_paths", _relative_paths(self.protected_paths))
        if not isinstance(self.network, bool):
            raise ShellValueError("network", self.network, "True or False")

    @property
    def writable_paths(self) -> tuple[Path, ...]:
        """The writable roots of ``workspace-write``: workspace, temp_dir, writable_roots."""
        first = tuple(p for p in (self.workspace, self.temp_dir) if p is not None)
        return first + self.writable_roots

    @property
    def protected_targets(self) -> tuple[Path, ...]:
        """``protected_paths`` as absolute paths (relative ones under ``workspace``; without a
        workspace, only the absolute ones)."""
        found: list[Path] = []
        for entry in self.protected_paths:
            if os.path.isabs(entry):
                found.append(Path(entry))
            elif self.workspace is not None:
                found.append(self.workspace / entry)
        return tuple(found)

    def widened(self, mode: SandboxMode) -> SandboxPolicy:
        """A copy under the wider ``mode``; `ShellValueError` unless `sandbox_widens`."""
        if not sandbox_widens(self.mode, mode):
            raise ShellValueError(
                "mode", mode, f"a sandbox only widens; {mode} is not wider than {self.mode}"
            )
        return dataclasses.replace(self, mode=mode)

    def check(self, path: str | os.PathLike[str], access: SandboxAccess) -> SandboxDecision:
        """Whether ``access`` to ``path`` is allowed, and by which rule; pure and lexical.

        ``path`` must be absolute (a relative one raises `ShellValueError`) and is normalized
        lexically, so ``/w/../etc/x`` is ``/etc/x``; resolve symlinks before asking. Rules, in
        order: ``danger-full-access`` allows everything; a denied path refuses read and write;
        reads are otherwise allowed; ``read-only`` refuses every write outside ``temp_dir``;
        ``workspace-write`` allows a write under a writable root unless it lies under a
        read-only path, under a protected name inside that root, or under a protected path of
        the workspace.
        """
        if access not in _ACCESSES:
            raise ShellValueError("access", access, "'read' or 'write'")
        target = _absolute("path", path)
        if self.mode == "danger-full-access":
            return SandboxDecision(True, f"danger-full-access mode: {target}")
        for denied in self.denied_paths:
            if _is_within(target, denied):
                return SandboxDecision(False, f"denied path {denied}: {target}")
        if access == "read":
            return SandboxDecision(True, f"read allowed: {target}")
        for read_only in self.read_only_paths:
            if _is_within(target, read_only):
                return SandboxDecision(False, f"read-only path {read_only}: {target}")
        if self.mode == "read-only":
            roots: tuple[Path, ...] = () if self.temp_dir is None else (self.temp_dir,)
        else:
            roots = self.writable_paths
        containing = [root for root in roots if _is_within(target, root)]
        if not containing:
            if self.mode == "read-only":
                return SandboxDecision(False, f"read-only mode: {target}")
            return SandboxDecision(False, f"write outside the writable roots: {target}")
        for root in containing:
            for part in target.relative_to(root).parts:
                if part in self.protected_names:
                    return SandboxDecision(False, f"protected name {part}: {target}")
        for protected in self.protected_targets:
            if _is_within(target, protected):
                return SandboxDecision(False, f"protected path {protected}: {target}")
        return SandboxDecision(True, f"write under the writable root {containing[0]}: {target}")


def _mode_rank(name: str, mode: object) -> int:
    if not isinstance(mode, str) or mode not in SANDBOX_MODES:
        raise ShellValueError(name, mode, f"one of {', '.join(SANDBOX_MODES)}")
    return SANDBOX_MODES.index(mode)


def _absolute(name: str, value: object) -> Path:
    if not isinstance(value, str | os.PathLike):
        raise ShellValueError(name, value, "an absolute path")
    raw = os.fspath(value)
    if not isinstance(raw, str) or "\0" in raw or not os.path.isabs(raw):
        raise ShellValueError(name, value, "an absolute path")
    return Path(os.path.normpath(raw))


def _absolute_paths(name: str, values: object) -> tuple[Path, ...]:
    if isinstance(values, str | bytes | os.PathLike) or not isinstance(values, tuple | list):
        raise ShellValueError(name, values, "a tuple of absolute paths")
    return tuple(_absolute(f"{name}[{index}]", item) for index, item in enumerate(values))


def _relative_paths(values: object) -> tuple[str, ...]:
    if isinstance(values, str | bytes | os.PathLike) or not isinstance(values, tuple | list):
        raise ShellValueError("protected_paths", values, "a tuple of paths")
    found: list[str] = []
    for index, item in enumerate(values):
        raw = os.fspath(item) if isinstance(item, str | os.PathLike) else item
        if not isinstance(raw, str) or not raw or "\0" in raw:
            raise ShellValueError(f"protected_paths[{index}]", item, "a path")
        normal = os.path.normpath(raw)
        if normal in (".", "..", "/", "//") or normal.startswith("../"):
            raise ShellValueError(
                f"protected_paths[{index}]", item, "an absolute path or one inside the workspace"
            )
        found.append(normal)
    return tuple(dict.fromkeys(found))


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
