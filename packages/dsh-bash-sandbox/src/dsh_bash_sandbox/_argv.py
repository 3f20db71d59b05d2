"""The ``bwrap`` command line of a confined command, and the shell line that runs it."""

from __future__ import annotations

import os
import shlex
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, Literal, TypeAlias

from dsh_bash_sandbox._probe import ISOLATION_FLAGS
from dsh_shell import SandboxPolicy, ShellValueError

PathKind: TypeAlias = Literal["dir", "file"] | None
"""What a path is on the host (following symlinks): a directory, another file, or nothing."""

# Signals whose default action does not end a process: an exit status of 128 + one of these
# is an ordinary exit status.
_NOT_RE_RAISED = (17, 18, 19, 20, 21, 22, 23, 28)


def host_kind(path: Path) -> PathKind:
    """The kind of ``path`` on this host, following symlinks (``None`` when absent)."""
    if os.path.isdir(path):
        return "dir"
    if os.path.exists(path):
        return "file"
    return None


def host_realpath(path: Path) -> Path:
    """``path`` with every symlink resolved (a bind mount lands on the real directory)."""
    return Path(os.path.realpath(path))


MountSource: TypeAlias = Callable[[Path, Path, Literal["dir", "file"]], int]
"""Opens a mount source for ``bwrap``: called with a writable root (its real path) and a real
path at or below it that must be a directory (``"dir"``) or a regular file (``"file"``), it
returns the descriptor number ``bwrap`` reads that path from, opened without following any
symlink, or raises `SandboxUnavailableError` naming the path."""


NESTED_DEPTH: Final = 4
"""How many directory levels below a writable root are searched for nested protected names."""

NESTED_BUDGET: Final = 4096
"""How many directories one search visits at most (a huge tree is not walked on every call)."""


def find_nested_protected(root: Path, names: tuple[str, ...]) -> list[Path]:
    """Protected names (a nested repository's ``.git``) below ``root``, up to `NESTED_DEPTH`
    levels down and `NESTED_BUDGET` directories, never following a symlink; the names directly
    in ``root`` are not included (the caller guards those already)."""
    found: list[Path] = []
    queue: list[tuple[str, int]] = [(str(root), 0)]
    visited = 0
    while queue and visited < NESTED_BUDGET:
        directory, depth = queue.pop(0)
        visited += 1
        try:
            with os.scandir(directory) as entries:
                children = [e for e in entries if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in children:
            if entry.name in names:
                if depth > 0:
                    found.append(Path(entry.path))
            elif depth + 1 < NESTED_DEPTH:
                queue.append((entry.path, depth + 1))
    return found


def bwrap_argv(
    policy: SandboxPolicy,
    *,
    workdir: Path,
    command: str,
    bwrap: str = "bwrap",
    shell: str = "/bin/bash",
    kind: Callable[[Path], PathKind] = host_kind,
    realpath: Callable[[Path], Path] = host_realpath,
    seccomp_fd: int | None = None,
    nested: Callable[[Path, tuple[str, ...]], list[Path]] = find_nested_protected,
    workspace_fd: int | None = None,
    sources: MountSource | None = None,
) -> list[str]:
    """The argv that runs ``shell -c command`` in ``workdir`` confined by ``policy``.

    Mounts, in order (a later mount covers an earlier one): ``/`` read-only, a private
    ``/dev`` and ``/proc``; each writable root that exists and is not inside another,
    read-write (``read-only`` mode: only ``temp_dir``); every directory between such a root
    and a guarded path below it, bound onto itself (pinned: a mount point cannot be renamed);
    each protected name that exists directly in a writable root or in ``workdir``, or below a
    root within `find_nested_protected`'s bounds (``nested``), each read-only path and each
    protected path of the workspace that exists, read-only (a missing one is held by a
    placeholder the executor makes first); each denied path that exists hidden (a directory
    under an empty read-only tmpfs, a file under ``/dev/null``).
    Then every namespace unshared (the network shared only when ``policy.network``), a new
    session, death with the parent, no capabilities, the seccomp filter read from
    ``seccomp_fd`` when given (see `seccomp_filter`), ``TMPDIR`` set to ``temp_dir``.
    ``kind`` and ``realpath`` default to the host's filesystem; pass others to build an argv
    without touching it. With ``workspace_fd`` (a descriptor of the pinned workspace that
    ``bwrap`` inherits, see `shell_line`) the workspace is bound from it (``--bind-fd``) at
    ``policy.workspace``, never by name, so a folder renamed after the pin was verified cannot
    change what is writable. With ``sources`` (see `MountSource`; the executor passes a
    `MountSources`), no mount at or below a writable root is given to ``bwrap`` by name: each
    root, each pinning self-bind and each read-only bind inside a root is bound from the
    descriptor ``sources`` opened (``--bind-fd``/``--ro-bind-fd``), so a folder swapped, or
    replaced by a symlink, after these checks cannot re-point a mount (destinations stay
    paths: they resolve inside the new mount namespace). ``danger-full-access`` has no argv:
    it raises `ShellValueError`.
    """
    if policy.mode == "danger-full-access":
        raise ShellValueError("policy.mode", policy.mode, "danger-full-access is not confined")
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ISOLATION_FLAGS[:1]
    if policy.network:
        argv.append("--share-net")
    argv += ISOLATION_FLAGS[1:]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if policy.mode == "read-only":
        writable: tuple[Path, ...] = () if policy.temp_dir is None else (policy.temp_dir,)
    else:
        writable = policy.writable_paths
    # Outer roots first; a root inside one already bound is writable through it and is never
    # mounted on its own, so a symlink a command planted there is never followed to a mount.
    roots = sorted((r for r in writable if kind(r) is not None), key=lambda r: len(r.parts))
    bound: list[Path] = []
    for root in roots:
        if any(_within(root, outer) for outer in bound):
            continue
        real = realpath(root)
        if any(_within(real, outer) for outer in bound):
            continue
        bound.append(real)
        if workspace_fd is not None and root == policy.workspace:
            argv += ["--bind-fd", str(workspace_fd), str(root)]
        elif sources is not None:
            fd = sources(real, real, "dir" if kind(real) == "dir" else "file")
            argv += ["--bind-fd", str(fd), str(real)]
        else:
            argv += ["--bind", str(real), str(real)]
    real_workdir = realpath(workdir)
    bases = [realpath(root) for root in roots]
    if any(_within(real_workdir, root) for root in bound):
        bases.append(real_workdir)
    guarded: list[tuple[str, Path, PathKind]] = []
    for path in [base / name for base in bases for name in policy.protected_names]:
        guarded.append(("read-only", path, kind(path)))
    for base in bases:  # a nested repository's .git too, within a bounded search
        guarded += [
            ("read-only", path, kind(path)) for path in nested(base, policy.protected_names)
        ]
    guarded += [("read-only", path, kind(path)) for path in policy.read_only_paths]
    guarded += [("read-only", path, kind(path)) for path in policy.protected_targets]
    guarded += [("denied", path, kind(path)) for path in policy.denied_paths]
    found = [(rule, realpath(path), what) for rule, path, what in guarded if what is not None]
    # Pin every directory between a writable root and a guarded path below it (bind it onto
    # itself: still writable, but a mount point cannot be renamed), so a command cannot move
    # the guarded path out from under its mount and reach it at a new name in a later run.
    pinned: list[Path] = []
    for _, real, _ in found:
        for root in bound:
            if _within(real, root) and real != root:
                for parent in reversed(real.relative_to(root).parents[:-1]):
                    directory = root / parent
                    if directory not in pinned:
                        pinned.append(directory)
                        argv += _bind("--bind", root, directory, "dir", sources)
    for rule, real, what in found:
        target = str(real)
        if rule == "read-only":
            root_of = next((root for root in bound if _within(real, root)), None)
            if root_of is None or sources is None:  # outside every writable root
                argv += ["--ro-bind", target, target]
            else:
                argv += _bind("--ro-bind", root_of, real, what, sources)
        elif what == "dir":
            argv += ["--tmpfs", target, "--remount-ro", target]
        else:
            argv += ["--ro-bind", "/dev/null", target]
    if policy.temp_dir is not None:
        argv += ["--setenv", "TMPDIR", str(policy.temp_dir)]
    argv += ["--chdir", str(workdir), "--", shell, "-c", command]
    return argv


SECCOMP_FD: Final = 9
"""The descriptor `shell_line` opens the seccomp filter file on for ``bwrap --seccomp``."""

WORKSPACE_FD: Final = 8
"""The descriptor `shell_line` opens the pinned workspace on for ``bwrap --bind-fd``."""


def shell_line(
    argv: list[str],
    seccomp_file: Path | None = None,
    *,
    workspace_source: str | None = None,
    sources: Sequence[tuple[int, str]] = (),
) -> str:
    """The line an inner executor's ``bash -c`` runs: ``exec`` of ``argv`` (no extra process).

    With ``seccomp_file``, the line opens it on `SECCOMP_FD` for ``bwrap`` to read (build
    ``argv`` with ``seccomp_fd=SECCOMP_FD``). With ``workspace_source`` (``/proc/<pid>/fd/<n>``
    of a descriptor the calling process holds on the pinned workspace: opening it re-opens
    that very directory, whatever its name leads to now) it opens it on `WORKSPACE_FD` (build
    ``argv`` with ``workspace_fd=WORKSPACE_FD``). Each of ``sources`` (a descriptor number and
    the ``/proc/<pid>/fd/<n>`` to open on it) is opened likewise, for ``--bind-fd`` and
    ``--ro-bind-fd`` (``bwrap`` closes each once it has mounted it).
    """
    line = f"exec {shlex.join(argv)}"
    if seccomp_file is not None:
        line += f" {SECCOMP_FD}< {shlex.quote(str(seccomp_file))}"
    if workspace_source is not None:
        line += f" {WORKSPACE_FD}< {shlex.quote(workspace_source)}"
    for number, source in sources:
        line += f" {number}< {shlex.quote(source)}"
    return line


def signal_from_status(exit_code: int | None) -> str | None:
    """The signal a confined command died of, read back from ``bwrap``'s exit status.

    ``bwrap`` reports a command killed by signal N as exit status 128 + N; this returns N's
    name (``"SIGTERM"``) for such a status, else ``None``. Not for N whose default action does
    not end a process (``SIGCHLD``, ``SIGCONT``, the stop signals, ``SIGURG``, ``SIGWINCH``).
    The price: a command that *exits* 128 + N on its own reads as killed by N.
    """
    if exit_code is None or not 128 < exit_code <= 128 + 64:
        return None
    number = exit_code - 128
    if number in _NOT_RE_RAISED:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def _bind(
    option: str, root: Path, path: Path, what: PathKind, sources: MountSource | None
) -> list[str]:
    """``option`` of ``path`` (inside ``root``) onto itself: from a descriptor when
    ``sources`` opens one, else by name."""
    if sources is None:
        return [option, str(path), str(path)]
    fd = sources(root, path, "dir" if what == "dir" else "file")
    return [f"{option}-fd", str(fd), str(path)]


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
