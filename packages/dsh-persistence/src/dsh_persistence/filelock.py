"""``FileLock``: a session's single writer across processes, as an ``flock`` on a lock file.

Why this runtime piece lives in the seam: the JSONL and SQLite backends both keep their
cross-process single writer this way, and any third-party backend that stores sessions in files
needs the same thing with the same pitfalls handled (a lock file replaced under the locker, a
contended lock told apart from an I/O error, the descriptor closed on every failure). It is
standard library only (``fcntl``, ``os``) and small, so the seam stays dependency-light; it is a
submodule that ``import dsh_persistence`` does not load, so a backend that keeps no lock files
(PostgreSQL's advisory locks) and a host without ``fcntl`` never import it.

The rules it keeps: the lock is an exclusive, non-blocking ``flock`` (the kernel releases it when
the holder dies, SIGKILL included); a lock file is never deleted, so every holder locks the same
inode; after locking, the path is re-checked to still name the locked inode (someone may have
removed or replaced the file) and the lock is retried a few times on the new one.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["FileLock", "LockContendedError", "open_lock_file"]

_ATTEMPTS = 3


class LockContendedError(Exception):
    """Another open file description (this process or another) holds the lock."""


def open_lock_file(path: Path) -> int:
    """Open (creating, mode 0600) the lock file ``path`` for ``FileLock.acquire``: read-write,
    close-on-exec, a final symbolic link refused (``OSError`` with ``ELOOP``), never followed."""
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    return os.open(path, flags, 0o600)


class FileLock:
    """An exclusive, non-blocking ``flock`` held on one lock file until ``release``."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, path: Path, *, opener: Callable[[Path], int] = open_lock_file) -> FileLock:
        """Take the lock on ``path`` or raise ``LockContendedError``; its directory must exist.

        ``opener(path)`` opens (or creates) the file and returns its descriptor, raising what
        the backend wants raised for a path that is no regular file (default:
        ``open_lock_file``). Any other ``OSError`` of opening or locking propagates.
        """
        for _ in range(_ATTEMPTS):
            fd = opener(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise LockContendedError(str(path)) from exc
                raise
            try:
                held = os.fstat(fd)
                current = os.lstat(path)
            except FileNotFoundError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            if (held.st_dev, held.st_ino) == (current.st_dev, current.st_ino):
                return cls(path, fd)
            os.close(fd)  # the path now names another file: lock that one instead
        raise LockContendedError(f"{path} kept changing while it was being locked")

    @property
    def held(self) -> bool:
        """True until ``release``."""
        return self._fd is not None

    def release(self) -> None:
        """Drop the lock (idempotent). The lock file stays."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
