"""The backend's own errors, and how a psycopg failure becomes one of the seam's."""

from __future__ import annotations

from typing import NoReturn

import psycopg

from dsh_persistence import SessionStorageError
from dsh_persistence_postgres._dsn import Target


class PostgresUnavailableError(SessionStorageError):
    """The PostgreSQL server cannot be reached or refused the connection (down, wrong
    host:port, authentication, connect timeout). The message names ``host:port`` and the
    DSN without its password; ``artifact`` is that password-free DSN."""


def connection_failed(
    error: BaseException, target: Target, session_id: str, operation: str
) -> PostgresUnavailableError:
    """The ``PostgresUnavailableError`` for a failed connect to ``target``."""
    detail = " ".join(target.scrub(str(error)).split())
    return PostgresUnavailableError(
        session_id,
        operation=operation,
        reason=f"cannot connect to PostgreSQL at {target.host_port}: {detail}",
        artifact=target.display,
    )


def raise_storage_error(
    error: psycopg.Error, target: Target, session_id: str, operation: str
) -> NoReturn:
    """Raise the seam's ``SessionStorageError`` (``PostgresUnavailableError`` for a lost or
    refused connection) for a psycopg failure, naming the session, the operation and the
    server (never the password)."""
    if isinstance(error, psycopg.OperationalError) and not isinstance(
        error, psycopg.errors.QueryCanceled | psycopg.errors.LockNotAvailable
    ):
        raise connection_failed(error, target, session_id, operation) from error
    code = f" [{error.sqlstate}]" if error.sqlstate else ""
    detail = " ".join(target.scrub(str(error)).split())
    raise SessionStorageError(
        session_id,
        operation=operation,
        reason=f"PostgreSQL at {target.host_port} refused it{code}: {detail}",
        artifact=target.display,
    ) from error
