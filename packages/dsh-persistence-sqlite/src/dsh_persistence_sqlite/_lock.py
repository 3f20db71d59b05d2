"""Single writer per session across processes: ``flock`` on a per-session lock file.

Lock files live in ``<database>-locks/`` beside the database, one per session, named by a hash of
the session id (an id never reaches the filesystem raw). They are never deleted, so every holder
locks the same inode. The kernel drops the lock when its holder dies, SIGKILL included.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import stat
from pathlib import Path

from dsh_persistence_sqlite._errors import UnsafeDatabasePathError


class LockContendedError(Exception):
    """Another open file description (this process or another) holds the session's lock."""


def lock_dir_for(database: Path) -> Path:
    """``<database>-locks``: the directory of the per-session lock files."""
    return database.with_name(database.name + "-locks")


def lock_name(session_id: str) -> str:
    """The lock file name of ``session_id``: a SHA-256 of its UTF-8 (surrogates kept)."""
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{digest[:40]}.lock"


def _ensure_dir(directory: Path) -> None:
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
        st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDatabasePathError(str(directory), "the lock directory is not a directory")


class SessionLock:
    """An exclusive, non-blocking ``flock`` on one session's lock file."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, directory: Path, session_id: str) -> SessionLock:
        """Take the lock or raise ``LockContendedError``."""
        _ensure_dir(directory)
        path = directory / lock_name(session_id)
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise LockContendedError(str(path)) from exc
            raise
        return cls(path, fd)

    @property
    def held(self) -> bool:
        """True until ``release``."""
        return self._fd is not None

    def release(self) -> None:
        """Drop the lock (idempotent); the lock file stays."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
