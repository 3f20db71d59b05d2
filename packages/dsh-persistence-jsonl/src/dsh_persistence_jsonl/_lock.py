"""Cross-process single-writer ownership: ``fcntl.flock`` on a lock file beside the log.

The lock file (``session.lock`` in the session directory) is never deleted, so every holder locks
the same inode; after locking, the path is re-checked to still name the locked inode (someone may
have removed or replaced it), retrying a few times. The kernel releases the lock when the holder
dies, SIGKILL included.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from dsh_persistence_jsonl._safefs import open_regular

LOCK_NAME = "session.lock"
"""File name of the per-session lock file."""

_ATTEMPTS = 3


class LockContendedError(Exception):
    """Another open file description (this process or another) holds the lock."""


class SessionLock:
    """An exclusive, non-blocking ``flock`` held on ``<session dir>/session.lock``."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, session_dir: Path) -> SessionLock:
        """Take the lock or raise ``LockContendedError``; the session directory must exist.
        A lock path that is not a regular file (a link, a FIFO) raises ``OddFileError``."""
        path = session_dir / LOCK_NAME
        for _ in range(_ATTEMPTS):
            fd, _st = open_regular(path, os.O_RDWR | os.O_CREAT)  # OddFileError: a link, a FIFO
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
