"""The single writer per session: a session-level advisory lock on a dedicated connection.

The lock key is the two-int4 form ``pg_try_advisory_lock(store_tag, lock_id)``:

- ``lock_id`` is the session's number in ``session_locks`` (an identity column, assigned the
  first time the id is created or opened for writing and never reused), so two sessions of one
  store never share a lock — no hash of the session id is involved, hence no collisions;
- ``store_tag`` is 31 bits of BLAKE2b of the schema name, so stores in other schemas of the same
  database use other keys; two schemas whose tags collide only share lock *numbers*, which can
  make a write open of one wait on or be refused by the other's holder, never let two writers in.

The lock lives as long as its connection: ``close`` (or the death of the process, or of the
connection) releases it, and the server frees it at once when the holder is killed.
"""

from __future__ import annotations

import contextlib
import hashlib

import psycopg
from psycopg import AsyncConnection

from dsh_persistence_postgres._connect import connect
from dsh_persistence_postgres._dsn import Target
from dsh_persistence_postgres._errors import raise_storage_error
from dsh_persistence_postgres._sql import Statements

DEFAULT_LOCK_GRACE_S = 0.2
"""How long a contended write open waits for the lock before refusing: covers a holder whose
process just died and whose server backend is still exiting."""

HOLDER = """SELECT a.pid, a.application_name, host(a.client_addr) FROM pg_locks AS l
JOIN pg_stat_activity AS a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid
LIMIT 1"""


def store_tag(schema: str) -> int:
    """The first lock key of every session of the store in ``schema`` (31 bits, non-negative)."""
    digest = hashlib.blake2b(schema.encode(), digest_size=4, person=b"dsh-pg-lock").digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


class LockContendedError(Exception):
    """Another connection holds the session's lock; ``holder`` describes it when known."""

    def __init__(self, holder: str | None) -> None:
        super().__init__(holder or "another connection")
        self.holder = holder


class SessionLock:
    """A held session lock: its dedicated connection (also the one the writer commits on)."""

    def __init__(self, connection: AsyncConnection, key: tuple[int, int]) -> None:
        self.connection = connection
        self.key = key

    @property
    def backend_pid(self) -> int:
        """The server process id of the lock connection."""
        return int(self.connection.info.backend_pid)

    @classmethod
    async def acquire(
        cls,
        target: Target,
        statements: Statements,
        tag: int,
        session_key: str,
        session_id: str,
        operation: str,
        grace_s: float,
    ) -> SessionLock:
        """Connect, find (or assign) the session's lock number, take the lock; raises
        ``LockContendedError`` when another connection keeps it past ``grace_s``."""
        connection = await connect(target, "writer", session_id, operation)
        try:
            try:
                lock_id = await _lock_id(connection, statements, session_key)
                key = (tag, lock_id)
                cursor = await connection.execute("SELECT pg_try_advisory_lock(%s, %s)", key)
                row = await cursor.fetchone()
                if not (row and row[0]) and not await _wait(connection, key, grace_s):
                    raise LockContendedError(await _holder(connection, key))
            except psycopg.Error as error:
                raise_storage_error(error, target, session_id, operation)
        except BaseException:
            await connection.close()
            raise
        return cls(connection, key)

    async def check(self) -> None:
        """One round trip on the lock connection: raises when it is gone."""
        await self.connection.execute("SELECT 1")

    async def release(self) -> None:
        """Close the lock connection (the server drops the lock with it). Idempotent."""
        with contextlib.suppress(Exception):
            await self.connection.close()


async def _lock_id(connection: AsyncConnection, statements: Statements, session_key: str) -> int:
    for _ in range(3):
        cursor = await connection.execute(statements.upsert_lock_id, (session_key,))
        row = await cursor.fetchone()
        if row is None:
            cursor = await connection.execute(statements.select_lock_id, (session_key,))
            row = await cursor.fetchone()
        if row is not None:
            return int(row[0])
    raise RuntimeError(f"no lock number could be assigned to {session_key!r}")


async def _wait(connection: AsyncConnection, key: tuple[int, int], grace_s: float) -> bool:
    """Wait up to ``grace_s`` for the lock (server-side, woken when it is released)."""
    if grace_s <= 0:
        return False
    timeout = f"{max(1, int(grace_s * 1000))}ms"
    await connection.execute("SELECT set_config('lock_timeout', %s, false)", (timeout,))
    try:
        await connection.execute("SELECT pg_advisory_lock(%s, %s)", key)
    except psycopg.errors.LockNotAvailable:
        return False
    finally:
        await connection.execute("SELECT set_config('lock_timeout', '0', false)")
    return True


async def _holder(connection: AsyncConnection, key: tuple[int, int]) -> str | None:
    try:
        cursor = await connection.execute(HOLDER, key)
        row = await cursor.fetchone()
    except psycopg.Error:
        return None
    if row is None:
        return None
    pid, name, address = row
    where = f", client {address}" if address else ""
    return f"{name or 'a PostgreSQL client'} (server backend pid {pid}{where})"
