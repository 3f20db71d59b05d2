"""``SqlitePersistence``: every session log in one SQLite database file."""

from __future__ import annotations

import asyncio
import builtins
import os
import sqlite3
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from dsh_persistence import (
    PersistenceBase,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionPersistenceNotFoundError,
    SessionSnapshot,
)
from dsh_persistence.filelock import FileLock, LockContendedError
from dsh_persistence_sqlite._handle import HandleServices, SqliteSessionHandle
from dsh_persistence_sqlite._lock import lock_dir_for, lock_session
from dsh_persistence_sqlite._storage import raise_storage_error
from dsh_persistence_sqlite._store import Store, StoredSession
from dsh_persistence_sqlite._worker import DatabaseThread
from dsh_session import SessionHeader

T = TypeVar("T")

DEFAULT_BUSY_TIMEOUT_MS = 5000


def _release_on_success(future: asyncio.Future[Any]) -> None:
    """For a claim whose awaiting caller was cancelled: drop what it acquired."""
    if future.cancelled() or future.exception() is not None:
        return
    result = future.result()
    if isinstance(result, FileLock):
        result.release()
    elif isinstance(result, SqliteSessionHandle):
        result._release_sync()


class SqlitePersistence(PersistenceBase[SqliteSessionHandle]):
    """Session logs in one SQLite database at ``path`` (stdlib ``sqlite3``, WAL, STRICT tables).

    - ``compression`` (default on): a row of 4 KiB or more is stored zstd-compressed when that
      is smaller; reading handles both forms whatever this setting is;
    - ``pack_chunks``: runs of ``assistant/chunk`` events are stored as packed rows (at most
      1,024 events and 1 MiB each); reads return the same logical events either way;
    - ``busy_timeout_ms``: how long a write waits for another connection's write transaction.

    The file is created with mode 0600; a symlink, a non-regular file, or a database that is not
    a dsh session store is refused with a ``SqliteStoreError`` naming the path (on first use,
    before anything is written to it). A full disk, a locked database, a read-only mount and
    other storage failures raise ``dsh_persistence.SessionStorageError`` naming the session, the
    operation and the path.
    Each append is one transaction with ``synchronous=FULL``: durable when it returns. A write
    handle owns its session in this process and, through an ``flock`` on a file in
    ``<path>-locks/``, across processes. All database work runs on one thread per instance.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        compression: bool = True,
        pack_chunks: bool = False,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    ) -> None:
        if not isinstance(compression, bool):
            raise TypeError(f"compression must be a bool, got {compression!r}")
        if not isinstance(pack_chunks, bool):
            raise TypeError(f"pack_chunks must be a bool, got {pack_chunks!r}")
        if type(busy_timeout_ms) is not int or not 0 <= busy_timeout_ms <= 2**31 - 1:
            raise ValueError(
                f"busy_timeout_ms must be an int in [0, 2**31-1], got {busy_timeout_ms!r}"
            )
        super().__init__()
        raw = os.fspath(path)
        if raw in ("", ":memory:") or raw.startswith("file:"):
            raise ValueError(f"path must name a database file, got {raw!r}")
        self._path = Path(os.path.abspath(os.path.expanduser(raw)))
        self._compression = compression
        self._pack = pack_chunks
        self._lock_dir = lock_dir_for(self._path)
        self._store = Store(self._path, busy_timeout_ms=busy_timeout_ms, compression=compression)
        self._thread = DatabaseThread(f"dsh-sqlite:{self._path.name}")
        # An instance dropped without aclose() still ends its thread (the connection closes
        # with the Store when it is collected).
        weakref.finalize(self, DatabaseThread.stop, self._thread)
        self._services = HandleServices(
            submit=self._submit,
            store=self._store,
            pack_chunks=pack_chunks,
        )

    @property
    def path(self) -> Path:
        """The absolute database path."""
        return self._path

    @property
    def lock_dir(self) -> Path:
        """``<path>-locks``: where the per-session lock files live."""
        return self._lock_dir

    @property
    def compression(self) -> bool:
        """Whether rows of 4 KiB and more are written zstd-compressed (when smaller)."""
        return self._compression

    @property
    def pack_chunks(self) -> bool:
        """Whether appended runs of chunk events are stored as packed rows."""
        return self._pack

    # -- plumbing ---------------------------------------------------------------------------

    def _submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Run ``fn(*args)`` on this instance's database thread, in call order."""
        return self._thread.submit(fn, *args)

    async def _claim(self, fn: Callable[..., T], *args: Any) -> T:
        """``_submit`` for work that acquires a lock: a cancelled caller does not leak it."""
        future = self._submit(fn, *args)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(_release_on_success)
            raise

    # -- storage (the books are PersistenceBase's) ------------------------------------------

    async def _claim_new(
        self, header: SessionHeader, inherited_event_count: int
    ) -> SqliteSessionHandle:
        lock = await self._claim(self._lock_new_sync, header.id)
        return SqliteSessionHandle(
            self._services,
            header=header,
            inherited_event_count=inherited_event_count,
            access="write",
            materialized=False,
            lock=lock,
        )

    def _lock_new_sync(self, session_id: str) -> FileLock:
        try:
            return self._lock_new(session_id)
        except (OSError, sqlite3.OperationalError) as error:
            raise_storage_error(error, session_id, "create", self._store.artifact)

    def _lock_new(self, session_id: str) -> FileLock:
        if self._store.exists(session_id):
            raise SessionAlreadyExistsError(session_id)
        try:
            lock = lock_session(self._lock_dir, session_id)
        except LockContendedError:
            raise SessionAlreadyExistsError(session_id) from None
        try:
            if self._store.exists(session_id):
                raise SessionAlreadyExistsError(session_id)
        except BaseException:
            lock.release()
            raise
        return lock

    async def _open_writer(self, session_id: str) -> SqliteSessionHandle:
        return await self._claim(self._open_write_sync, session_id)

    def _open_write_sync(self, session_id: str) -> SqliteSessionHandle:
        try:
            return self._open_write(session_id)
        except (OSError, sqlite3.OperationalError) as error:
            raise_storage_error(error, session_id, "open", self._store.artifact)

    def _open_write(self, session_id: str) -> SqliteSessionHandle:
        if not self._store.exists(session_id):
            raise SessionPersistenceNotFoundError(session_id)
        try:
            lock = lock_session(self._lock_dir, session_id)
        except LockContendedError:
            raise SessionAlreadyOwnedError(session_id) from None
        try:
            tail = self._store.open_for_write(session_id)
        except BaseException:
            lock.release()
            raise
        return SqliteSessionHandle(
            self._services,
            header=tail.stored.header,
            inherited_event_count=tail.stored.inherited_event_count,
            access="write",
            materialized=True,
            next_seq=tail.next_seq,
            torn_seq=tail.torn_seq,
            lock=lock,
        )

    async def _open_reader(self, session_id: str) -> SqliteSessionHandle:
        pending = self._pending.get(session_id)
        if pending is not None:
            header, inherited = pending.header, pending.inherited_event_count
        else:
            stored = await self._submit(self._load_sync, session_id)
            if stored is None:
                raise SessionPersistenceNotFoundError(session_id)
            header, inherited = stored.header, stored.inherited_event_count
        return SqliteSessionHandle(
            self._services,
            header=header,
            inherited_event_count=inherited,
            access="read",
            materialized=True,
        )

    def _load_sync(self, session_id: str) -> StoredSession | None:
        try:
            return self._store.load(session_id)
        except (OSError, sqlite3.OperationalError) as error:
            raise_storage_error(error, session_id, "open", self._store.artifact)

    # -- metadata ---------------------------------------------------------------------------

    async def _stat_stored(self, session_id: str) -> SessionSnapshot | None:
        """Its sessions row and its last event row."""
        return await self._submit(self._stat_sync, session_id)

    def _stat_sync(self, session_id: str) -> SessionSnapshot | None:
        try:
            return self._store.snapshot(session_id)
        except (OSError, sqlite3.OperationalError) as error:
            raise_storage_error(error, session_id, "stat", self._store.artifact)

    async def _list_stored(self) -> builtins.list[SessionSnapshot]:
        return await self._submit(self._list_sync)

    def _list_sync(self) -> builtins.list[SessionSnapshot]:
        try:
            return self._store.snapshots()
        except (OSError, sqlite3.OperationalError) as error:
            raise_storage_error(error, "", "list", self._store.artifact)

    async def _close_storage(self) -> None:
        """Close the database and end its thread."""
        try:
            await self._submit(self._store.close)
        finally:
            self._thread.stop()

    def __repr__(self) -> str:
        return (
            f"SqlitePersistence({str(self._path)!r}, compression={self._compression}, "
            f"pack_chunks={self._pack})"
        )
