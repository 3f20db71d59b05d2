"""Opening connections: the dedicated ones (schema setup, session locks) and the shared pool."""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from dsh_persistence_postgres._dsn import CONNECT_TIMEOUT_S, Target
from dsh_persistence_postgres._errors import connection_failed, raise_storage_error

T = TypeVar("T")

POOL_MIN_SIZE = 1
POOL_MAX_SIZE = 8


def application_name(role: str) -> str:
    """``application_name`` of this process's connections: who holds a lock, in ``pg_locks``."""
    name = f"dsh-{role} pid={os.getpid()} host={socket.gethostname()}"
    return name.encode()[:63].decode("utf-8", "ignore")


async def connect(target: Target, role: str, session_id: str, operation: str) -> AsyncConnection:
    """A new autocommit connection with ``synchronous_commit = on`` (its commits are durable
    when they return); ``PostgresUnavailableError`` naming host:port when it cannot be made."""
    try:
        connection = await AsyncConnection.connect(
            target.conninfo, autocommit=True, application_name=application_name(role)
        )
    except psycopg.Error as error:
        raise connection_failed(error, target, session_id, operation) from None
    try:
        await connection.execute("SET synchronous_commit = on")
    except BaseException:
        await connection.close()
        raise
    return connection


async def _configure(connection: AsyncConnection) -> None:
    await connection.execute("SET synchronous_commit = on")


def make_pool(target: Target, name: str) -> AsyncConnectionPool:
    """The instance's shared pool (reads, stat, list, write opens): not opened yet."""
    return AsyncConnectionPool(
        target.conninfo,
        min_size=POOL_MIN_SIZE,
        max_size=POOL_MAX_SIZE,
        kwargs={"autocommit": True, "application_name": application_name("pool")},
        configure=_configure,
        # A connection the server ended while it sat idle here (a restart, a failover, an idle
        # timeout) is found on checkout and replaced, not handed out.
        check=AsyncConnectionPool.check_connection,
        timeout=CONNECT_TIMEOUT_S,
        name=name,
        open=False,
    )


async def pooled(
    pool: AsyncConnectionPool,
    target: Target,
    session_id: str,
    operation: str,
    work: Callable[[AsyncConnection], Awaitable[T]],
) -> T:
    """``work(connection)`` on a connection of ``pool`` (reads only: it may run twice).

    A connection that passed the checkout check but turns out dead on first use (the server
    ended it in between) is dropped and ``work`` runs once more on another; any other failure,
    or a second one, raises the seam's error naming ``session_id`` and ``operation``.
    """
    for attempt in (1, 2):
        connection: AsyncConnection | None = None
        try:
            async with pool.connection() as connection:
                return await work(connection)
        except psycopg.OperationalError as error:
            if attempt == 1 and connection is not None and connection.broken:
                continue  # died idle: the pool discards it; try once more
            raise_storage_error(error, target, session_id, operation)
        except psycopg.Error as error:
            raise_storage_error(error, target, session_id, operation)
    raise AssertionError("unreachable")  # pragma: no cover
