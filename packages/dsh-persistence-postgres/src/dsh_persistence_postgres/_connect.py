"""Opening connections: the dedicated ones (schema setup, session locks) and the shared pool."""

from __future__ import annotations

import os
import socket

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from dsh_persistence_postgres._dsn import CONNECT_TIMEOUT_S, Target
from dsh_persistence_postgres._errors import connection_failed

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
        timeout=CONNECT_TIMEOUT_S,
        name=name,
        open=False,
    )
