"""Storage failures as the seam's ``SessionStorageError``.

A full disk, a read-only mount, a database locked past ``busy_timeout``, a file that cannot be
opened, an I/O error: ``sqlite3.OperationalError`` with one of SQLite's storage result codes, or
an ``OSError`` from the database's directory or the lock files. Each becomes a
``SessionStorageError`` naming the session ("" for ``list``), the operation and the database
path. Any other error (a bug, a corrupt file) is left as it is.
"""

from __future__ import annotations

import errno as errnos
import sqlite3
from typing import NoReturn

from dsh_persistence import SessionStorageError

_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _FULL, _CANTOPEN, _PROTOCOL, _NOLFS = (
    3,
    5,
    6,
    8,
    10,
    13,
    14,
    15,
    22,
)
_STORAGE_CODES = frozenset(
    {_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _FULL, _CANTOPEN, _PROTOCOL, _NOLFS}
)
"""SQLite's primary result codes that mean the storage refused, not that the data is wrong."""

_HINTS = {
    _BUSY: "another connection held the database's write lock longer than busy_timeout_ms",
    _LOCKED: "another connection held the database's write lock longer than busy_timeout_ms",
    _FULL: "the file system is full; what was committed before is kept, retry once there is space",
    _READONLY: "the database or its directory is read-only",
    _CANTOPEN: "the database (or its -wal/-shm beside it) cannot be opened or created",
}
_ERRNOS = {_FULL: errnos.ENOSPC}


def storage_error(
    error: BaseException, session_id: str, operation: str, artifact: str
) -> SessionStorageError | None:
    """The ``SessionStorageError`` standing for ``error``, or ``None`` when it is not a storage
    failure."""
    if isinstance(error, sqlite3.OperationalError):
        code = getattr(error, "sqlite_errorcode", None)
        if code is None or code & 0xFF not in _STORAGE_CODES:
            return None
        primary = code & 0xFF
        name = getattr(error, "sqlite_errorname", "")
        hint = _HINTS.get(primary)
        reason = f"{error} ({name})" + (f": {hint}" if hint else "")
        return SessionStorageError(
            session_id,
            operation=operation,
            reason=reason,
            artifact=artifact,
            errno=_ERRNOS.get(primary),
        )
    if isinstance(error, OSError):
        where = f" ({error.filename})" if error.filename else ""
        return SessionStorageError(
            session_id,
            operation=operation,
            reason=f"{error.strerror or error}{where}",
            artifact=artifact,
            errno=error.errno,
        )
    return None


def raise_storage_error(
    error: BaseException, session_id: str, operation: str, artifact: str
) -> NoReturn:
    """Raise ``error`` as a ``SessionStorageError`` when it is a storage failure, else as is
    (call it from the ``except`` block that caught ``error``)."""
    translated = storage_error(error, session_id, operation, artifact)
    if translated is None:
        raise error
    raise translated from error
