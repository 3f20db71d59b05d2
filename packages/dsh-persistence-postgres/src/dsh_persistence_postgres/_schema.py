"""Creating and checking the store's schema: a version row, refused when unknown or newer."""

from __future__ import annotations

import uuid

import psycopg
from psycopg import AsyncConnection

from dsh_persistence import SessionFormatUnsupportedError
from dsh_persistence_postgres._dsn import Target
from dsh_persistence_postgres._errors import raise_storage_error
from dsh_persistence_postgres._sql import SCHEMA_VERSION, SETUP_LOCK_ID, Statements

STORE_TABLES = frozenset({"store_info", "sessions", "events", "session_locks"})


def _refusal(target: Target, schema: str, reason: str, version: int | None) -> Exception:
    return SessionFormatUnsupportedError(
        "", reason, artifact=f"{target.display} schema {schema!r}", version=version
    )


async def ensure_store(
    connection: AsyncConnection, target: Target, statements: Statements, schema: str, tag: int
) -> str:
    """Create the store in ``schema`` when the schema has no table, else check it is this
    build's (``SessionFormatUnsupportedError`` for an unknown or newer ``schema_version``, or a
    schema holding other tables); return its ``store_id``. Concurrent callers serialize on a
    transaction-scoped advisory lock."""
    try:
        async with connection.transaction():
            await connection.execute("SELECT pg_advisory_xact_lock(%s, %s)", (tag, SETUP_LOCK_ID))
            cursor = await connection.execute(statements.schema_tables, (schema,))
            tables = {row[0] for row in await cursor.fetchall()}
            if not tables:
                await connection.execute(statements.create_schema)
                store_id = uuid.uuid4().hex
                for statement in statements.create:
                    await connection.execute(
                        statement, {"version": SCHEMA_VERSION, "store_id": store_id}
                    )
                return store_id
            if "store_info" not in tables:
                raise _refusal(
                    target,
                    schema,
                    f"schema {schema!r} holds tables {sorted(tables)} but no store_info: it is "
                    "not a dsh session store (or one of an unknown version)",
                    None,
                )
            cursor = await connection.execute(statements.select_store_info)
            rows = await cursor.fetchall()
    except psycopg.Error as error:
        raise_storage_error(error, target, "", "open the store")
    if len(rows) != 1:
        raise _refusal(target, schema, f"store_info holds {len(rows)} rows, not 1", None)
    version, store_id = rows[0]
    if type(version) is int and version > SCHEMA_VERSION:
        raise _refusal(
            target,
            schema,
            f"schema version {version} was written by a newer dsh-persistence-postgres (this "
            f"build handles v{SCHEMA_VERSION}); upgrade dsh to open it",
            version,
        )
    if version != SCHEMA_VERSION:
        raise _refusal(
            target,
            schema,
            f"schema version {version!r} is not one this build knows (v{SCHEMA_VERSION})",
            version if type(version) is int else None,
        )
    missing = STORE_TABLES - tables
    if missing:
        raise _refusal(target, schema, f"the store lacks tables {sorted(missing)}", version)
    return str(store_id)
