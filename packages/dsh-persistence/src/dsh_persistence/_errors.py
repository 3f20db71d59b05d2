"""The consumer-visible errors of the persistence seam: one base, ten facts-carrying classes."""

from __future__ import annotations

from typing import Any


class SessionPersistenceError(Exception):
    """Base of every error the persistence seam defines; ``session_id`` names the session."""

    session_id: str

    def __init__(self, session_id: str, message: str) -> None:
        super().__init__(message)
        self.session_id = session_id
        self._init_kwargs: dict[str, Any] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only constructors do not survive the default exception pickling, and errors
        # cross process boundaries (a child process holding a session reports through them).
        return (_rebuild, (type(self), self.session_id, self._init_kwargs))


def _rebuild(
    cls: type[SessionPersistenceError], session_id: str, kwargs: dict[str, Any]
) -> SessionPersistenceError:
    return cls(session_id, **kwargs)


class SessionPersistenceNotFoundError(SessionPersistenceError):
    """``open`` of an id with no session, or a read handle whose artifact vanished."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id, f"session {session_id!r} not found")


class SessionAlreadyExistsError(SessionPersistenceError):
    """``create`` of an id that is already stored or pending (or lost a concurrent create)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            session_id,
            f"session {session_id!r} already exists; open it instead, or create a new id",
        )


class SessionAlreadyOwnedError(SessionPersistenceError):
    """A write open while another write handle (in any process) owns the session."""

    holder: str | None

    def __init__(self, session_id: str, *, holder: str | None = None) -> None:
        by = f" by {holder}" if holder else ""
        super().__init__(
            session_id,
            f"session {session_id!r} is already open for writing{by}; only one writer at a "
            "time — close the other handle (or stop the other process) first, or open it "
            "with access='read'",
        )
        self.holder = holder
        self._init_kwargs = {"holder": holder}


class SessionReadOnlyError(SessionPersistenceError):
    """``append`` or ``flush`` on a handle opened with ``access='read'``."""

    operation: str

    def __init__(self, session_id: str, *, operation: str) -> None:
        super().__init__(
            session_id,
            f"cannot {operation} session {session_id!r} through a read handle; "
            "open it with access='write'",
        )
        self.operation = operation
        self._init_kwargs = {"operation": operation}


class SessionHandleClosedError(SessionPersistenceError):
    """Any operation on a handle after its ``close()``."""

    operation: str

    def __init__(self, session_id: str, *, operation: str) -> None:
        super().__init__(
            session_id, f"cannot {operation} session {session_id!r}: the handle is closed"
        )
        self.operation = operation
        self._init_kwargs = {"operation": operation}


class PersistenceClosedError(SessionPersistenceError):
    """Any call on a backend instance after its ``aclose()``; ``backend`` names the instance.

    ``session_id`` is the session the call was about (empty for ``list`` and ``flush``).
    """

    backend: str
    operation: str

    def __init__(self, session_id: str, *, backend: str, operation: str) -> None:
        about = f" session {session_id!r}" if session_id else ""
        super().__init__(session_id, f"cannot {operation}{about}: {backend} is closed")
        self.backend = backend
        self.operation = operation
        self._init_kwargs = {"backend": backend, "operation": operation}


class SessionOwnershipLostError(SessionPersistenceError):
    """The write handle no longer owns the session (a lease expired, a lock was broken)."""

    reason: str | None

    def __init__(self, session_id: str, *, reason: str | None = None) -> None:
        why = f": {reason}" if reason else ""
        super().__init__(
            session_id,
            f"the write handle of session {session_id!r} lost ownership{why}; "
            "reopen the session to continue",
        )
        self.reason = reason
        self._init_kwargs = {"reason": reason}


class SessionPersistenceCorruptionError(SessionPersistenceError):
    """Committed bytes fail validation; names the artifact and the 1-based line or the row."""

    reason: str
    artifact: str | None
    line: int | None
    row: int | None

    def __init__(
        self,
        session_id: str,
        reason: str,
        *,
        artifact: str | None = None,
        line: int | None = None,
        row: int | None = None,
    ) -> None:
        where = artifact or "the stored log"
        if line is not None:
            where += f" line {line}"
        if row is not None:
            where += f" row {row}"
        super().__init__(session_id, f"session {session_id!r} is corrupt at {where}: {reason}")
        self.reason = reason
        self.artifact = artifact
        self.line = line
        self.row = row
        self._init_kwargs = {"reason": reason, "artifact": artifact, "line": line, "row": row}


class SessionFormatUnsupportedError(SessionPersistenceError):
    """An intact log this build cannot handle: a foreign format version, or (for a write open)
    an unknown event type not marked ``ignorable``. A newer version says to upgrade."""

    reason: str
    artifact: str | None
    version: int | None
    event_type: str | None

    def __init__(
        self,
        session_id: str,
        reason: str,
        *,
        artifact: str | None = None,
        version: int | None = None,
        event_type: str | None = None,
    ) -> None:
        raw = f" (raw log: {artifact})" if artifact else ""
        super().__init__(session_id, f"session {session_id!r}: {reason}{raw}")
        self.reason = reason
        self.artifact = artifact
        self.version = version
        self.event_type = event_type
        self._init_kwargs = {
            "reason": reason,
            "artifact": artifact,
            "version": version,
            "event_type": event_type,
        }


class SessionStorageError(SessionPersistenceError):
    """The storage refused an operation: a full disk, a read-only filesystem, a database locked
    past its timeout, an artifact that cannot be opened. Names the session, the operation and
    the artifact; what was committed before stays committed, and the same call may succeed once
    the cause is gone (free space, release the lock)."""

    operation: str
    reason: str
    artifact: str | None
    errno: int | None

    def __init__(
        self,
        session_id: str,
        *,
        operation: str,
        reason: str,
        artifact: str | None = None,
        errno: int | None = None,
    ) -> None:
        where = f" ({artifact})" if artifact else ""
        subject = f" session {session_id!r}" if session_id else ""  # "" for list: no session
        super().__init__(session_id, f"cannot {operation}{subject}{where}: {reason}")
        self.operation = operation
        self.reason = reason
        self.artifact = artifact
        self.errno = errno
        self._init_kwargs = {
            "operation": operation,
            "reason": reason,
            "artifact": artifact,
            "errno": errno,
        }
