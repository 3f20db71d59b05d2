"""Single writer per session across processes: the seam's ``FileLock`` on a per-session file.

Lock files live in ``<database>-locks/`` beside the database, one per session, named by a hash of
the session id (an id never reaches the filesystem raw). The locking itself (``flock``, the
re-check that the path still names the locked inode, release) is ``dsh_persistence.filelock``'s.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path

from dsh_persistence.filelock import FileLock
from dsh_persistence_sqlite._errors import UnsafeDatabasePathError


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


def lock_session(directory: Path, session_id: str) -> FileLock:
    """Take the lock of ``session_id`` in ``directory`` (made if missing) or raise
    ``LockContendedError``."""
    _ensure_dir(directory)
    return FileLock.acquire(directory / lock_name(session_id))
