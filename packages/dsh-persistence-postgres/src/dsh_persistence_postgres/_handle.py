"""``PostgresSessionHandle``: one session opened for read or write."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, Unpack

import psycopg
import zstandard
from psycopg_pool import AsyncConnectionPool

from dsh_persistence import (
    HandleIdentity,
    SessionAlreadyExistsError,
    SessionHandleBase,
    SessionHandleClosedError,
    SessionOwnershipLostError,
    SessionPersistenceNotFoundError,
    check_read_range,
    encode_append_batch,
)
from dsh_persistence_postgres._connect import pooled
from dsh_persistence_postgres._dsn import Target
from dsh_persistence_postgres._errors import raise_storage_error
from dsh_persistence_postgres._lock import SessionLock
from dsh_persistence_postgres._rows import EncodedRows, rows_of_batch
from dsh_persistence_postgres._store import Reader
from dsh_persistence_postgres._text import to_column
from dsh_session import SessionEvent, encode_header_line


@dataclass(frozen=True, slots=True)
class HandleServices:
    """What a handle needs from the instance that made it (and nothing else of it).

    - ``target``: the server (for error messages); ``reader``: the store's read statements;
    - ``pool``: the instance's shared pool (reads);
    - ``compressor``: zstd for lines of 4 KiB and more, or ``None``.
    """

    target: Target
    reader: Reader
    pool: AsyncConnectionPool
    compressor: zstandard.ZstdCompressor | None


class PostgresSessionHandle(SessionHandleBase):
    """A per-session handle of :class:`PostgresPersistence` (an async context manager).

    A write handle owns its session through a session-level advisory lock held on its own
    connection, and commits every append on that same connection (one transaction each, with
    ``synchronous_commit = on``: durable when it returns), so nothing commits once the lock is
    gone. When that connection is lost (the server terminated it, the network dropped), every
    later ``append``/``flush`` raises ``SessionOwnershipLostError``. Operations on one handle run
    in call order; ``close`` drains the ones started before it. Reads use the instance's pool
    and see every append that returned before they started.
    """

    def __init__(
        self,
        services: HandleServices,
        *,
        next_seq: int = 0,
        lock: SessionLock | None = None,
        **identity: Unpack[HandleIdentity],
    ) -> None:
        super().__init__(**identity)
        self._services = services
        self._key = to_column(self.id)
        self._op = asyncio.Lock()
        self._next_seq = next_seq
        # a new session has no rows past its commit point
        self._tail_checked = not self._materialized
        self._lock = lock
        self._lost: str | None = None
        self._inflight: asyncio.Future[None] | None = None

    # -- identity ---------------------------------------------------------------------------

    @property
    def lock_backend_pid(self) -> int | None:
        """The server process id of a write handle's lock connection (``None`` for a read
        handle or once closed): what ``pg_terminate_backend`` would cut."""
        return None if self._lock is None else self._lock.backend_pid

    # -- reading ----------------------------------------------------------------------------

    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        """The events with ``seq >= offset``, at most ``length`` of them (``[]`` past the end;
        any non-negative ints, however large)."""
        self._check_open("read")
        check_read_range(offset, length)
        if self._access == "write" and not self._materialized:
            return []
        services = self._services
        events = await pooled(
            services.pool,
            services.target,
            self.id,
            "read",
            lambda connection: services.reader.read(connection, self.id, offset, length),
        )
        if events is None:
            if self._session_pending():
                return []
            raise SessionPersistenceNotFoundError(self.id)
        self._check_served(offset, length, len(events), services.reader.artifact)
        return events

    # -- writing ----------------------------------------------------------------------------

    def _owned_lock(self, operation: str) -> SessionLock:
        if self._lost is not None:
            raise SessionOwnershipLostError(self.id, reason=self._lost)
        lock = self._lock
        if lock is None:  # closed while this operation waited: close drains only earlier ones
            raise SessionHandleClosedError(self.id, operation=operation)
        return lock

    def _lose(self, error: BaseException, operation: str) -> NoReturn:
        target = self._services.target
        detail = " ".join(target.scrub(str(error)).split())
        self._lost = (
            f"the connection holding its lock on {target.host_port} was lost during {operation} "
            f"({detail}); what it did not commit before is not stored"
        )
        raise SessionOwnershipLostError(self.id, reason=self._lost) from error

    def _failed(self, error: psycopg.Error, lock: SessionLock, operation: str) -> NoReturn:
        connection = lock.connection
        if (
            connection.closed
            or connection.broken
            or (
                isinstance(error, psycopg.OperationalError)
                and not isinstance(error, psycopg.errors.QueryCanceled)
            )
        ):
            self._lose(error, operation)
        raise_storage_error(error, self._services.target, self.id, operation)

    async def append(self, events: Sequence[SessionEvent]) -> None:
        """Append a contiguous batch starting at the stored next seq, in one transaction on the
        lock connection (visible and durable when this returns)."""
        self._check_writable("append")
        lines = encode_append_batch(self.id, events)
        if not lines:
            return
        async with self._op:
            await self._settle()
            lock = self._owned_lock("append")
            rows = rows_of_batch(self.id, events, lines, self._next_seq, self._services.compressor)
            await self._shielded(self._append_work(lock, rows))

    async def _shielded(self, work: Coroutine[Any, Any, None]) -> None:
        """Run storage work to its end even if the caller is cancelled (a commit's outcome is
        then known, and this handle's next seq stays true); the next operation waits for it."""
        task = asyncio.ensure_future(work)
        self._inflight = task
        await asyncio.shield(task)

    async def _settle(self) -> None:
        """Wait for storage work whose caller was cancelled (its failure, if any, already
        marked this handle: a lost connection makes later operations raise)."""
        task, self._inflight = self._inflight, None
        if task is None:
            return
        if not task.done():
            await asyncio.wait([task])
        if not task.cancelled():
            task.exception()  # retrieved: its caller saw it, or was cancelled

    async def _append_work(self, lock: SessionLock, rows: EncodedRows) -> None:
        try:
            await self._commit(lock, rows)
        except psycopg.Error as error:
            self._failed(error, lock, "append")
        self._next_seq += len(rows.seqs)

    async def _commit(self, lock: SessionLock, rows: EncodedRows) -> None:
        """Store ``rows`` on the lock connection: normally the one ``append`` statement (its
        own transaction); the first append of a created session also inserts the sessions row,
        and the first of a write open also deletes rows past the commit point (left by
        something writing out of band), each in one transaction with the append."""
        connection = lock.connection
        first = self._next_seq
        params = {
            "next": first + len(rows.seqs),
            "size": rows.size_bytes,
            "id": self._key,
            "first": first,
            "seqs": rows.seqs,
            "lines": rows.lines,
            "zlines": rows.zlines,
        }
        statements = self._services.reader.statements
        if self._materialized and self._tail_checked:
            cursor = await connection.execute(statements.append, params)
            result = await cursor.fetchone()
        else:
            async with connection.transaction():
                if not self._materialized:
                    await self._insert_session(lock)
                else:
                    await connection.execute(statements.delete_beyond, (self._key, first))
                cursor = await connection.execute(statements.append, params)
                result = await cursor.fetchone()
                if result != (1, len(rows.seqs)):
                    await self._refuse(lock, first)
        if result != (1, len(rows.seqs)):
            await self._refuse(lock, first)
        self._tail_checked = True
        self._materialized = True

    async def _refuse(self, lock: SessionLock, first: int) -> NoReturn:
        """Word why the commit point was not ``first`` (nothing was stored)."""
        statements = self._services.reader.statements
        cursor = await lock.connection.execute(statements.select_event_count, (self._key,))
        row = await cursor.fetchone()
        if row is None:
            raise SessionPersistenceNotFoundError(self.id)
        raise SessionOwnershipLostError(
            self.id,
            reason=f"the stored log holds {row[0]} events where this writer expected {first} "
            "(something wrote without the session lock); nothing of this batch was stored",
        )

    async def _insert_session(self, lock: SessionLock) -> None:
        """The sessions row of a created session: its header line, an empty log."""
        line = encode_header_line(self._header, self._inherited)
        cursor = await lock.connection.execute(
            self._services.reader.statements.insert_session,
            (self._key, line.decode(), uuid.uuid4().hex, 0, len(line) + 1),
        )
        if await cursor.fetchone() is None:  # (someone wrote the row without the lock)
            raise SessionAlreadyExistsError(self.id)

    async def flush(self) -> None:
        """Make every appended event durable (each append already committed with
        ``synchronous_commit = on``) after checking the lock connection is alive; materializes
        an empty created session."""
        self._check_writable("flush")
        async with self._op:
            await self._settle()
            lock = self._owned_lock("flush")
            await self._shielded(self._flush_work(lock))

    async def _flush_work(self, lock: SessionLock) -> None:
        try:
            if self._materialized:
                await lock.check()
            else:
                await self._insert_session(lock)
                self._materialized = True
        except psycopg.Error as error:
            self._failed(error, lock, "flush")

    # -- closing ----------------------------------------------------------------------------

    async def _close(self) -> None:
        try:
            async with self._op:  # the operations started before close run first
                await self._settle()
        finally:
            lock, self._lock = self._lock, None
            if lock is not None:
                await lock.release()
