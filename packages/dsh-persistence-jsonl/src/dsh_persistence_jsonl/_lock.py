"""Cross-process single-writer ownership: the seam's ``FileLock`` on a lock file beside the log.

The lock file is ``session.lock`` in the session directory, opened like every file below the
root (no link followed, nothing but a regular file accepted: ``OddFileError``). The locking
itself (``flock``, the re-check that the path still names the locked inode, release) is
``dsh_persistence.filelock``'s.
"""

from __future__ import annotations

import os
from pathlib import Path

from dsh_persistence.filelock import FileLock
from dsh_persistence_jsonl._safefs import open_regular

LOCK_NAME = "session.lock"
"""File name of the per-session lock file."""


def _open_lock(path: Path) -> int:
    fd, _st = open_regular(path, os.O_RDWR | os.O_CREAT)  # OddFileError: a link, a FIFO
    return fd


def lock_session(session_dir: Path) -> FileLock:
    """Take the session's lock or raise ``LockContendedError``; the session directory must
    exist. A lock path that is not a regular file (a link, a FIFO) raises ``OddFileError``."""
    return FileLock.acquire(session_dir / LOCK_NAME, opener=_open_lock)
