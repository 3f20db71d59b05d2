"""``SqliteSessionHandle``: one session opened for read or write on a session database."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from dsh_persistence import (
    HandleIdentity,
    SessionHandleBase,
    check_read_range,
    encode_append_batch,
)
from dsh_persistence.filelock import FileLock
from dsh_persistence_sqlite._rows import rows_of_batch
from dsh_persistence_sqlite._storage import raise_storage_error
from dsh_persistence_sqlite._store import Store, now_ms
from dsh_session import SessionEvent


@dataclass(frozen=True, slots=True)
class HandleServices:
    """What a handle needs from the instance that made it (and nothing else of it).

    - ``submit(fn, *args)``: run ``fn`` on the instance's database thread, in call order;
    - ``store``: the instance's ``Store`` (only used on that thread);
    - ``pack_chunks``: whether appends store runs of chunk events as packed rows.
    """

    submit: Callable[..., asyncio.Future[Any]]
    store: Store
    pack_chunks: bool


class SqliteSessionHandle(SessionHandleBase):
    """A per-session handle of :class:`SqlitePersistence` (an async context manager).

    A write handle is the single owner of its session (an in-process claim plus an ``flock`` on
    the session's lock file). Every operation runs on the instance's database thread, in the
    order it was called, so appends from many tasks are serialized and ``close`` drains the
    ones started before it. Reads come from the database: a read handle sees every append that
    returned before the read started, and never a shorter log than it saw before.
    """

    def __init__(
        self,
        services: HandleServices,
        *,
        next_seq: int = 0,
        torn_seq: int | None = None,
        lock: FileLock | None = None,
        **identity: Unpack[HandleIdentity],
    ) -> None:
        # materialized is write state, changed only on the database thread
        super().__init__(**identity)
        self._services = services
        self._next_seq = next_seq
        self._torn_seq = torn_seq
        self._touched = False
        self._lock = lock

    # -- operations -------------------------------------------------------------------------

    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        """The events with ``seq >= offset``, at most ``length`` of them (``[]`` past the end;
        any non-negative ints, however large)."""
        self._check_open("read")
        check_read_range(offset, length)
        events: list[SessionEvent] = await self._services.submit(self._read_sync, offset, length)
        return events

    def _read_sync(self, offset: int, length: int | None) -> list[SessionEvent]:
        try:
            return self._read(offset, length)
        except (OSError, sqlite3.OperationalError) as error:
            raise_storage_error(error, self.id, "read", self._services.store.artifact)

    def _read(self, offset: int, length: int | None) -> list[SessionEvent]:
        store = self._services.store
        if self._access == "write" and not self._materialized:
            return []
        must_exist = not self._session_pending()
        events = store.read(self.id, offset, length, must_exist=must_exist)
        if events is None:
            return []
        self._check_served(offset, length, len(events), store.artifact)
        return events

    async def append(self, events: Sequence[SessionEvent]) -> None:
        """Append a contiguous batch starting at the stored next seq; visible and durable (one
        ``synchronous=FULL`` transaction) when this returns."""
        self._check_writable("append")
        lines = encode_append_batch(self.id, events)
        if not lines:
            return
        await self._services.submit(self._append_sync, tuple(events), lines)

    def _append_sync(self, events: Sequence[SessionEvent], lines: list[bytes]) -> None:
        try:
            self._append(events, lines)
        except (OSError, sqlite3.OperationalError) as error:
            raise_storage_error(error, self.id, "append", self._services.store.artifact)

    def _append(self, events: Sequence[SessionEvent], lines: list[bytes]) -> None:
        store = self._services.store
        rows = rows_of_batch(
            self.id,
            events,
            lines,
            first_seq=self._next_seq,
            written_at=now_ms(),
            pack_chunks=self._services.pack_chunks,
            compressor=store.compressor,
        )
        if not self._materialized:
            store.materialize(self._header, self._inherited, rows)
            self._materialized = True
        else:
            store.append(self.id, rows, self._torn_seq)
            self._torn_seq = None
        self._next_seq += len(events)
        self._touched = True

    async def flush(self) -> None:
        """Make every appended event durable (they already are: each append commits with
        ``synchronous=FULL``); materializes an empty created session."""
        self._check_writable("flush")
        self._touched = True
        if self._materialized:
            return  # every append that returned was committed with synchronous=FULL
        await self._services.submit(self._flush_sync)

    def _flush_sync(self) -> None:
        self._touched = True
        if not self._materialized:
            try:
                self._services.store.materialize(self._header, self._inherited, [])
            except (OSError, sqlite3.OperationalError) as error:
                raise_storage_error(error, self.id, "flush", self._services.store.artifact)
            self._materialized = True

    async def _close(self) -> None:
        try:
            await self._services.submit(self._release_sync)
        finally:
            self._release_sync()  # idempotent: releases here if the thread could not

    def _release_sync(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()
