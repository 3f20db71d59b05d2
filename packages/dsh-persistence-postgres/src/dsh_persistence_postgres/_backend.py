"""``PostgresPersistence``: every session log in one PostgreSQL schema."""

from __future__ import annotations

import asyncio
import builtins
import itertools
import re

import zstandard

from dsh_persistence import (
    PersistenceBase,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionPersistenceNotFoundError,
    SessionSnapshot,
)
from dsh_persistence_postgres._connect import connect, make_pool, pooled
from dsh_persistence_postgres._dsn import Target
from dsh_persistence_postgres._handle import HandleServices, PostgresSessionHandle
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


class PostgresPersistence(PersistenceBase[PostgresSessionHandle]):
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
        super().__init__()
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
            )
            return self._services

    def _current(self) -> HandleServices | None:
        return self._services

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

    # -- storage (the books are PersistenceBase's) ------------------------------------------

    async def _claim_new(
        self, header: SessionHeader, inherited_event_count: int
    ) -> PostgresSessionHandle:
        """The new session's advisory lock (``SessionAlreadyExistsError`` when it is stored or
        another instance or process holds the lock)."""
        session_id = header.id
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
        return PostgresSessionHandle(
            services,
            header=header,
            inherited_event_count=inherited_event_count,
            access="write",
            materialized=False,
            lock=lock,
        )

    async def _open_writer(self, session_id: str) -> PostgresSessionHandle:
        """Take the session's advisory lock (``SessionAlreadyOwnedError`` when any connection
        anywhere holds it), then check the whole log."""
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

    async def _open_reader(self, session_id: str) -> PostgresSessionHandle:
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
        return PostgresSessionHandle(
            services,
            header=header,
            inherited_event_count=inherited,
            access="read",
            materialized=True,
        )

    # -- metadata ---------------------------------------------------------------------------

    async def _stat_stored(self, session_id: str) -> SessionSnapshot | None:
        """From its sessions row alone."""
        services = await self._ready_services(session_id, "stat")
        loaded = await pooled(
            services.pool,
            self._target,
            session_id,
            "stat",
            lambda connection: services.reader.load(connection, session_id),
        )
        return None if loaded is None else loaded[0]

    async def _list_stored(self) -> builtins.list[SessionSnapshot]:
        """From the sessions rows alone."""
        services = await self._ready_services("", "list")
        return await pooled(services.pool, self._target, "", "list", services.reader.snapshots)

    async def _close_storage(self) -> None:
        """Close the pool (the handles, with their lock connections, are closed already)."""
        services, self._services = self._services, None
        if services is not None:
            await services.pool.close()

    def __repr__(self) -> str:
        return (
            f"PostgresPersistence({self._target.display!r}, schema={self._schema!r}, "
            f"compression={self._compression})"
        )
