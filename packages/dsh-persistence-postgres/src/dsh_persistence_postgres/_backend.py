"""``PostgresPersistence``: every session log in one PostgreSQL schema."""

from __future__ import annotations

import asyncio
import builtins
import itertools
import re

import zstandard

from dsh_persistence import (
    PersistenceClosedError,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionPersistenceNotFoundError,
    SessionSnapshot,
    flush_handles,
    materialize_create_header,
)
from dsh_persistence_postgres._connect import connect, make_pool, pooled
from dsh_persistence_postgres._dsn import Target
from dsh_persistence_postgres._handle import Access, HandleServices, PostgresSessionHandle
from dsh_persistence_postgres._lock import (
    DEFAULT_LOCK_GRACE_S,
    LockContendedError,
    SessionLock,
    store_tag,
)
from dsh_persistence_postgres._rows import COMPRESSION_LEVEL
from dsh_persistence_postgres._schema import ensure_store
from dsh_persistence_postgres._sql import Statements
from dsh_persistence_postgres._store import Reader
from dsh_persistence_postgres._text import to_column
from dsh_session import SessionHeader

_instances = itertools.count(1)


def _check_schema(schema: object) -> str:
    if not isinstance(schema, str) or not schema:
        raise ValueError(f"schema must be a non-empty str, got {schema!r}")
    if len(schema.encode()) > 63 or "\x00" in schema:
        raise ValueError(
            f"schema must be a PostgreSQL identifier of at most 63 bytes, got {schema!r}"
        )
    if re.match(r"^pg_", schema) or schema == "information_schema":
        raise ValueError(f"schema {schema!r} is reserved by PostgreSQL")
    return schema


class PostgresPersistence:
    """Session logs in a PostgreSQL database, in their own schema (``dsh`` by default).

    - ``dsn``: a libpq connection string or URI (its password never appears in a repr, a log
      line or an error; ``connect_timeout`` defaults to 5 s);
    - ``schema``: the schema holding the store, created with its tables on first use; one
      whose ``schema_version`` is unknown or newer is refused
      (``SessionFormatUnsupportedError``);
    - ``compression`` (default on): an event line of 4 KiB or more is stored zstd-compressed when
      that is smaller; reads handle both forms whatever this setting is;
    - ``lock_grace_s``: how long a contended write open waits before refusing (covers a holder
      whose process just died).

    Nothing connects until the first operation; a server that cannot be reached then raises
    ``PostgresUnavailableError`` (a ``SessionStorageError``) naming host:port. Reads, ``stat``
    and ``list`` share a pool (1 to 8 connections); each write handle also holds one dedicated
    connection, carrying its session's advisory lock and its commits.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "dsh",
        compression: bool = True,
        lock_grace_s: float = DEFAULT_LOCK_GRACE_S,
    ) -> None:
        if not isinstance(compression, bool):
            raise TypeError(f"compression must be a bool, got {compression!r}")
        if not isinstance(lock_grace_s, int | float) or not 0 <= lock_grace_s <= 60:
            raise ValueError(
                f"lock_grace_s must be a number of seconds in [0, 60], got {lock_grace_s!r}"
            )
        self._target = Target.parse(dsn)
        self._schema = _check_schema(schema)
        self._compression = compression
        self._lock_grace = float(lock_grace_s)
        self._statements = Statements.for_schema(self._schema)
        self._tag = store_tag(self._schema)
        self._artifact = f"{self._target.display} schema {self._schema!r} table events"
        self._compressor = (
            zstandard.ZstdCompressor(level=COMPRESSION_LEVEL, write_content_size=True)
            if compression
            else None
        )
        self._name = f"dsh-postgres-{next(_instances)}"
        self._ready: asyncio.Lock | None = None
        self._services: HandleServices | None = None
        self._pending: dict[str, PostgresSessionHandle] = {}
        self._pending_tokens: dict[str, int] = {}
        self._writers: dict[str, PostgresSessionHandle | None] = {}
        self._handles: set[PostgresSessionHandle] = set()
        self._tokens = itertools.count(1)
        self._closed = False

    @property
    def schema(self) -> str:
        """The schema holding the store."""
        return self._schema

    @property
    def dsn(self) -> str:
        """The DSN as shown: ``postgresql://user:***@host:port/dbname`` (no password)."""
        return self._target.display

    @property
    def compression(self) -> bool:
        """Whether lines of 4 KiB and more are written zstd-compressed (when smaller)."""
        return self._compression

    # -- plumbing ---------------------------------------------------------------------------

    def _check_instance(self, operation: str, session_id: str = "") -> None:
        if self._closed:
            backend = f"{self!r}"
            raise PersistenceClosedError(session_id, backend=backend, operation=operation)

    async def _ready_services(self, session_id: str, operation: str) -> HandleServices:
        """Connect on first use: check (or create) the schema, open the pool (a failure names
        ``session_id`` and ``operation``, the call that needed the store)."""
        if self._services is not None:
            return self._services
        if self._ready is None:
            self._ready = asyncio.Lock()
        async with self._ready:
            ready = self._current()
            if ready is not None:  # another task set it up meanwhile
                return ready
            connection = await connect(self._target, "setup", session_id, operation)
            try:
                store_id = await ensure_store(
                    connection, self._target, self._statements, self._schema, self._tag
                )
            finally:
                await connection.close()
            pool = make_pool(self._target, self._name)
            await pool.open(wait=False)
            self._services = HandleServices(
                target=self._target,
                reader=Reader(self._statements, store_id, self._artifact),
                pool=pool,
                compressor=self._compressor,
                is_pending=self._is_pending,
                forget=self._forget,
            )
            return self._services

    def _current(self) -> HandleServices | None:
        return self._services

    def _is_pending(self, session_id: str) -> bool:
        handle = self._pending.get(session_id)
        return handle is not None and not handle.materialized

    def _forget(self, handle: PostgresSessionHandle) -> None:
        self._handles.discard(handle)
        session_id = handle.id
        if self._writers.get(session_id) is handle:
            del self._writers[session_id]
        if self._pending.get(session_id) is handle:
            del self._pending[session_id]  # closed unwritten: it never existed
            self._pending_tokens.pop(session_id, None)

    async def _exists(self, services: HandleServices, session_id: str, operation: str) -> bool:
        return await pooled(
            services.pool,
            self._target,
            session_id,
            operation,
            lambda connection: services.reader.exists(connection, session_id),
        )

    async def _acquire(
        self, services: HandleServices, session_id: str, operation: str
    ) -> SessionLock:
        return await SessionLock.acquire(
            self._target,
            self._statements,
            self._tag,
            to_column(session_id),
            session_id,
            operation,
            self._lock_grace,
        )

    # -- service ----------------------------------------------------------------------------

    async def create(
        self, header: SessionHeader, *, inherited_event_count: int = 0
    ) -> PostgresSessionHandle:
        """Start a session (materialized by its first append or flush); its write handle.

        Raises ``SessionAlreadyExistsError`` if the id is stored, pending here, or being
        created by another instance or process (which holds its lock).
        """
        self._check_instance("create", header.id)
        materialize_create_header(header, inherited_event_count)
        session_id = header.id
        if session_id in self._pending or session_id in self._writers:
            raise SessionAlreadyExistsError(session_id)
        self._writers[session_id] = None
        self._pending_tokens[session_id] = next(self._tokens)
        try:
            services = await self._ready_services(session_id, "create")
            if await self._exists(services, session_id, "create"):
                raise SessionAlreadyExistsError(session_id)
            try:
                lock = await self._acquire(services, session_id, "create")
            except LockContendedError:
                raise SessionAlreadyExistsError(session_id) from None
            try:
                if await self._exists(services, session_id, "create"):
                    raise SessionAlreadyExistsError(session_id)
            except BaseException:
                await lock.release()
                raise
        except BaseException:
            if self._writers.get(session_id) is None:
                self._writers.pop(session_id, None)
            self._pending_tokens.pop(session_id, None)
            raise
        handle = PostgresSessionHandle(
            services,
            header=header,
            inherited_event_count=inherited_event_count,
            access="write",
            materialized=False,
            lock=lock,
        )
        self._pending[session_id] = handle
        self._writers[session_id] = handle
        self._handles.add(handle)
        return handle

    async def open(self, session_id: str, access: Access) -> PostgresSessionHandle:
        """Open a stored (or, in this instance, pending) session for ``"read"`` or ``"write"``.

        A write open takes the session's advisory lock (``SessionAlreadyOwnedError`` when any
        connection anywhere holds it) and then checks the whole log.
        """
        self._check_instance("open", session_id)
        if access not in ("read", "write"):
            raise ValueError(f"access must be 'read' or 'write', got {access!r}")
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, got {type(session_id).__name__}")
        if access == "read":
            return await self._open_read(session_id)
        if session_id in self._writers:
            raise SessionAlreadyOwnedError(session_id)
        self._writers[session_id] = None  # the claim; released on any failure below
        try:
            handle = await self._open_write(session_id)
        except BaseException:
            if self._writers.get(session_id) is None:
                self._writers.pop(session_id, None)
            raise
        self._writers[session_id] = handle
        self._handles.add(handle)
        return handle

    async def _open_write(self, session_id: str) -> PostgresSessionHandle:
        services = await self._ready_services(session_id, "open")
        if not await self._exists(services, session_id, "open"):
            raise SessionPersistenceNotFoundError(session_id)
        try:
            lock = await self._acquire(services, session_id, "open")
        except LockContendedError as contended:
            raise SessionAlreadyOwnedError(session_id, holder=contended.holder) from None
        try:
            loaded = await pooled(
                services.pool,
                self._target,
                session_id,
                "open",
                lambda connection: services.reader.scan_for_write(connection, session_id),
            )
            if loaded is None:
                raise SessionPersistenceNotFoundError(session_id)
        except BaseException:
            await lock.release()
            raise
        snapshot, inherited = loaded
        return PostgresSessionHandle(
            services,
            header=snapshot.header,
            inherited_event_count=inherited,
            access="write",
            materialized=True,
            next_seq=snapshot.event_count or 0,
            lock=lock,
        )

    async def _open_read(self, session_id: str) -> PostgresSessionHandle:
        pending = self._pending.get(session_id)
        services = await self._ready_services(session_id, "open")
        if pending is not None:
            header, inherited = pending.header, pending.inherited_event_count
        else:
            loaded = await pooled(
                services.pool,
                self._target,
                session_id,
                "open",
                lambda connection: services.reader.load(connection, session_id),
            )
            if loaded is None:
                raise SessionPersistenceNotFoundError(session_id)
            header, inherited = loaded[0].header, loaded[1]
        handle = PostgresSessionHandle(
            services,
            header=header,
            inherited_event_count=inherited,
            access="read",
            materialized=True,
        )
        self._handles.add(handle)
        return handle

    # -- metadata ---------------------------------------------------------------------------

    def _pending_snapshot(self, handle: PostgresSessionHandle) -> SessionSnapshot:
        token = self._pending_tokens.get(handle.id, 0)
        return SessionSnapshot(header=handle.header, revision=f"pending:{token}", event_count=0)

    async def stat(self, session_id: str) -> SessionSnapshot | None:
        """The snapshot of one session, from its sessions row alone; ``None`` if absent."""
        self._check_instance("stat", session_id)
        pending = self._pending.get(session_id)
        if pending is not None and not pending.materialized:
            return self._pending_snapshot(pending)
        services = await self._ready_services(session_id, "stat")
        loaded = await pooled(
            services.pool,
            self._target,
            session_id,
            "stat",
            lambda connection: services.reader.load(connection, session_id),
        )
        return None if loaded is None else loaded[0]

    async def list(self) -> builtins.list[SessionSnapshot]:
        """Every visible session (stored, plus this instance's pending creates), from the
        sessions rows alone."""
        self._check_instance("list")
        services = await self._ready_services("", "list")
        snapshots = await pooled(services.pool, self._target, "", "list", services.reader.snapshots)
        pending = [h for h in self._pending.values() if not h.materialized]
        if pending:
            seen = {snapshot.header.id for snapshot in snapshots}
            snapshots.extend(self._pending_snapshot(h) for h in pending if h.id not in seen)
        return snapshots

    async def flush(self) -> None:
        """Durability barrier over every write handle active now; failures are aggregated."""
        self._check_instance("flush")
        await flush_handles([h for h in self._writers.values() if h is not None])

    async def aclose(self) -> None:
        """Close every handle of this instance (releasing every lock) and the pool."""
        if self._closed:
            return
        self._closed = True
        handles = builtins.list(self._handles)
        results = await asyncio.gather(*(h.close() for h in handles), return_exceptions=True)
        services, self._services = self._services, None
        if services is not None:
            await services.pool.close()
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            raise ExceptionGroup(f"closing {len(errors)} handle(s) failed", errors)

    def __repr__(self) -> str:
        return (
            f"PostgresPersistence({self._target.display!r}, schema={self._schema!r}, "
            f"compression={self._compression})"
        )
