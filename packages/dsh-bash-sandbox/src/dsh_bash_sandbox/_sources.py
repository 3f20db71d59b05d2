"""Mount sources opened by descriptor: nothing below a writable root is bound by its name.

``bwrap`` resolves a source given as a path on the host when it mounts it, which is later than
the sandbox checked that path: a folder swapped (or replaced by a symlink) in between would
re-point the mount, say a read-write self-bind onto a folder outside the workspace. So every
source at or below a writable root is opened here first, component by component from the
root's descriptor, never following a symlink, and handed to ``bwrap`` as a descriptor
(``--bind-fd``/``--ro-bind-fd``): what is mounted is what was opened, whatever the names lead
to by the time ``bwrap`` runs.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Final, Literal

from dsh_bash_sandbox._argv import PathKind, find_nested_protected, host_kind, host_realpath
from dsh_shell import SandboxUnavailableError

FIRST_SOURCE_FD: Final = 10
"""The first descriptor number ``bwrap`` reads a mount source from (8 and 9 are taken)."""

MAX_SOURCE_FDS: Final = 512
"""How many mount sources one command may have (each is an open descriptor until it ends)."""

_MAX_LINKS = 40


class PinnedView:
    """Paths below a pinned workspace, looked up through its descriptor, never through its
    name: the pinned ``root`` (its real path) and ``fd`` (a descriptor of it this process
    holds). The kernel follows ``/proc/self/fd/<fd>`` to that very directory, so a workspace
    swapped after the pin was verified cannot change what these see. Paths not below ``root``
    are looked up on the host as usual."""

    def __init__(self, root: Path, fd: int) -> None:
        self.root = root
        self.fd = fd
        self.view = Path(f"/proc/self/fd/{fd}")

    def _below(self, path: Path) -> tuple[str, ...] | None:
        parts = Path(path).parts
        if parts[: len(self.root.parts)] != self.root.parts:
            return None
        return parts[len(self.root.parts) :]

    def through(self, path: Path) -> Path:
        """``path``, below the root as reached through the descriptor."""
        below = self._below(path)
        return path if below is None else self.view.joinpath(*below)

    def kind(self, path: Path) -> PathKind:
        """`host_kind` of ``path``, below the root through the descriptor."""
        below = self._below(path)
        return host_kind(path if below is None else self.view.joinpath(*below))

    def realpath(self, path: Path) -> Path:
        """`host_realpath` of ``path``; below the root each symlink is read through the
        descriptor (one that leads out of the root continues on the host)."""
        below = self._below(path)
        if below is None:
            return host_realpath(path)
        parts = list(below)
        done: list[str] = []
        links = 0
        while parts:
            part = parts.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not done:  # out of the root: the rest is the host's
                    return host_realpath(self.root.parent.joinpath(*parts))
                done.pop()
                continue
            here = "/".join([*done, part])
            try:
                facts = os.lstat(here, dir_fd=self.fd)
            except OSError:  # missing (or unreadable): the rest as written
                return self.root.joinpath(*done, part, *parts)
            if not stat.S_ISLNK(facts.st_mode):
                done.append(part)
                continue
            links += 1
            if links > _MAX_LINKS:
                return self.root.joinpath(*done, part, *parts)
            target = Path(os.readlink(here, dir_fd=self.fd))
            if target.is_absolute():
                inside = self._below(target)
                if inside is None:
                    return host_realpath(target.joinpath(*parts))
                done, parts = [], [*inside, *parts]
            else:
                parts = [*target.parts, *parts]
        return self.root.joinpath(*done)

    def nested(self, base: Path, names: tuple[str, ...]) -> list[Path]:
        """`find_nested_protected` of ``base``, below the root through the descriptor."""
        below = self._below(base)
        if below is None:
            return find_nested_protected(base, names)
        found = find_nested_protected(self.view.joinpath(*below), names)
        return [self.root / path.relative_to(self.view) for path in found]


_FIX_CHANGED = (
    "run the command again; if it keeps failing, look at what replaced that path (a "
    "background job may be moving folders around) and restore the folder"
)


class MountSources:
    """The descriptors one confined command's mounts come from; `close` once it has ended.

    ``pinned`` maps a writable root (its real path) to a descriptor the caller holds on it (a
    pinned workspace's): paths below it are opened from that descriptor, which is borrowed,
    never closed here. Any other root is opened on first use.
    """

    def __init__(self, pinned: dict[Path, int] | None = None) -> None:
        self._roots: dict[Path, int] = dict(pinned or {})
        self._owned: list[int] = []
        self._passed: list[tuple[int, int]] = []  # (number in bwrap, descriptor here)

    def borrow(self, root: Path, fd: int) -> None:
        """Open paths below ``root`` from ``fd`` (the caller's, never closed here)."""
        self._roots[root] = fd

    @property
    def passed(self) -> list[tuple[int, int]]:
        """Each ``(number bwrap reads it on, descriptor this process holds)``."""
        return list(self._passed)

    def __call__(self, root: Path, path: Path, kind: Literal["dir", "file"]) -> int:
        """The descriptor number ``bwrap`` reads ``path`` (``root`` itself, or a real path
        below it) from: opened from ``root``'s descriptor one component at a time, never
        following a symlink, and of ``kind`` (a directory, or a regular file).

        `SandboxUnavailableError` naming ``path`` when a component is a symlink, is missing
        or is not what was checked, or when the command has too many mount sources.
        """
        if len(self._passed) >= MAX_SOURCE_FDS:
            raise SandboxUnavailableError(
                f"the command would need more than {MAX_SOURCE_FDS} guarded mounts (at "
                f"{path}); it was not run",
                "move nested repositories out of the workspace, or fewer protected paths",
            )
        if path == root and kind == "file":  # a writable root that is a file (nothing below)
            fd = self._open_file_root(root)
        elif path == root:
            fd = os.dup(self._root(root))
        else:
            fd = self._open_below(root, path, kind)
        self._owned.append(fd)
        number = FIRST_SOURCE_FD + len(self._passed)
        self._passed.append((number, fd))
        return number

    def close(self) -> None:
        """Close every descriptor opened here (idempotent; borrowed ones stay open)."""
        owned, self._owned = self._owned, []
        self._passed = []
        self._roots = {root: fd for root, fd in self._roots.items() if fd not in owned}
        for fd in owned:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _root(self, root: Path) -> int:
        fd = self._roots.get(root)
        if fd is None:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(root, flags)
            except OSError as error:
                raise SandboxUnavailableError(
                    f"the writable root {root} cannot be opened ({error.strerror or error}): "
                    "it was replaced while the command was being prepared; it was not run",
                    _FIX_CHANGED,
                ) from error
            self._owned.append(fd)
            self._roots[root] = fd
        return fd

    def _open_file_root(self, root: Path) -> int:
        try:
            fd = os.open(root, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as error:
            raise SandboxUnavailableError(
                f"the writable root {root} cannot be opened ({error.strerror or error}): it "
                "was replaced while the command was being prepared; it was not run",
                _FIX_CHANGED,
            ) from error
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise SandboxUnavailableError(
                f"the writable root {root} is neither a folder nor a regular file; it was not run",
                f"remove {root} from the writable roots",
            )
        return fd

    def _open_below(self, root: Path, path: Path, kind: Literal["dir", "file"]) -> int:
        parts = path.relative_to(root).parts
        current = self._root(root)
        between: list[int] = []
        try:
            for index, part in enumerate(parts):
                if index < len(parts) - 1:
                    flags = os.O_PATH | os.O_DIRECTORY
                elif kind == "dir":
                    flags = os.O_RDONLY | os.O_DIRECTORY
                else:  # never blocks, even on a FIFO (refused below)
                    flags = os.O_RDONLY | os.O_NONBLOCK
                current = os.open(part, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=current)
                between.append(current)
            mode = os.fstat(current).st_mode
        except OSError as error:
            for fd in between:
                os.close(fd)
            raise SandboxUnavailableError(
                f"the path {path} below the writable root {root} is not what was checked "
                f"({error.strerror or error}: a component is now a symlink, missing or not a "
                "folder; it was replaced while the command was being prepared); it was not run",
                _FIX_CHANGED,
            ) from error
        for fd in between[:-1]:
            os.close(fd)
        if not (stat.S_ISDIR(mode) if kind == "dir" else stat.S_ISREG(mode)):
            os.close(current)
            what = "a folder" if kind == "dir" else "a regular file"
            raise SandboxUnavailableError(
                f"the guarded path {path} is not {what} (a FIFO, socket or device cannot be "
                "held read-only, and a path that changed kind was replaced); it was not run",
                f"remove or rename {path}",
            )
        return current
