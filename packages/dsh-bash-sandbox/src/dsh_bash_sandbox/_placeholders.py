"""Placeholders: a protected path that does not exist yet is held by an empty read-only folder.

A read-only mount needs something to mount on. For a protected name that is missing from a
writable root (no ``.claude`` yet), the executor creates a placeholder there — an empty
directory with mode `PLACEHOLDER_MODE` (sticky, read and search only), which no user makes —
and mounts it read-only, so ``mkdir .claude`` fails inside the sandbox. A confined command
cannot remove it (inside, it is a mount point); the executor removes it once no confined
command of any process uses it. Every user holds a shared ``flock`` on the directory for as
long as its command runs; the last one takes it exclusively and removes it (only if it is
still an empty placeholder, so nothing is ever lost). A user that finds the placeholder
removed while it waited makes a new one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Final

PLACEHOLDER_MODE: Final = 0o1555
"""The mode of a placeholder directory: sticky, readable and searchable, never writable."""

_ATTEMPTS = 16


def is_placeholder(facts: os.stat_result) -> bool:
    """Whether ``facts`` (of ``lstat`` or ``fstat``) describe a placeholder directory: sticky
    and without any write bit (what ``mkdir`` with `PLACEHOLDER_MODE` makes under any umask)."""
    mode = stat.S_IMODE(facts.st_mode)
    return stat.S_ISDIR(facts.st_mode) and bool(mode & stat.S_ISVTX) and not mode & 0o222


class PlaceholderHold:
    """Placeholders one confined command uses; `release` once the command has ended."""

    def __init__(self) -> None:
        self._held: list[tuple[Path, int]] = []
        self._then: list[Callable[[], None]] = []

    def on_release(self, action: Callable[[], None]) -> None:
        """Call ``action`` once, at the next `release` (after the placeholders are dropped)."""
        self._then.append(action)

    @property
    def paths(self) -> list[Path]:
        """The placeholders held (each an empty read-only directory while held)."""
        return [path for path, _ in self._held]

    def hold(self, path: Path) -> None:
        """Create (or join) the placeholder at ``path`` when nothing else is there.

        Nothing happens when ``path`` exists as anything but a placeholder (it is then guarded
        as it is) or when its parent is not a directory; an `OSError` creating it propagates.
        """
        for _ in range(_ATTEMPTS):
            try:
                os.mkdir(path, PLACEHOLDER_MODE)  # recognizable from its first instant
            except FileExistsError:
                pass
            except (FileNotFoundError, NotADirectoryError):
                return
            try:
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # removed meanwhile: make it again
            except OSError as error:
                if error.errno in (errno.ENOTDIR, errno.ELOOP):
                    return  # a file or a symlink: not a placeholder, guarded as it is
                raise
            facts = os.fstat(fd)
            if not is_placeholder(facts):
                os.close(fd)
                return
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits while the last user removes it
            try:
                now = os.lstat(path)
            except OSError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (facts.st_dev, facts.st_ino):
                self._held.append((path, fd))
                return
            os.close(fd)  # it was removed (and maybe made again) while this one waited
        raise OSError(errno.EAGAIN, "the placeholder kept changing", str(path))

    def release(self) -> None:
        """Drop every hold; remove each placeholder no other command holds (idempotent)."""
        held, self._held = self._held, []
        then, self._then = self._then, []
        try:
            self._drop(held)
        finally:
            for action in then:
                action()

    def _drop(self, held: list[tuple[Path, int]]) -> None:
        for path, fd in held:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)  # another command still uses it: the last one removes it
                continue
            try:
                facts = os.fstat(fd)
                now = os.lstat(path)
                same = (now.st_dev, now.st_ino) == (facts.st_dev, facts.st_ino)
                if same and is_placeholder(now):
                    with contextlib.suppress(OSError):  # not empty: nothing is removed
                        os.rmdir(path)
            except OSError:
                pass
            finally:
                os.close(fd)
