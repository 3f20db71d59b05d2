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

from dsh_shell import SandboxUnavailableError

FIRST_SOURCE_FD: Final = 10
"""The first descriptor number ``bwrap`` reads a mount source from (8 and 9 are taken)."""

MAX_SOURCE_FDS: Final = 512
"""How many mount sources one command may have (each is an open descriptor until it ends)."""

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
