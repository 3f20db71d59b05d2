"""Every SQL statement of the backend, rendered once per schema (values are always bound).

The store lives in its own PostgreSQL schema (default ``dsh``):

- ``store_info``: one row, the ``schema_version`` this build reads and writes and a random
  ``store_id`` (part of every snapshot revision);
- ``sessions``: one row per materialized session: its canonical header line (``header``, text),
  ``event_count`` (the commit point: the log is the events rows ``0 .. event_count - 1``),
  ``size_bytes`` (the plain JSONL size of the log: header line and event lines, newlines
  included), ``updated_at`` (epoch ms, the server's clock) and ``incarnation``;
- ``events``: one row per event, primary key ``(session_id, seq)``: the canonical JSON line as
  written (``line``, text) or, for a line of 4 KiB and more when compression is on and helps,
  its zstd frame (``zline``, bytea); exactly one of the two is set;
- ``session_locks``: the advisory-lock number of each session id ever created or opened for
  writing (an identity column: unique by construction, so two sessions never share a lock).

Ids are stored in ``_text.to_column`` form.
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

SCHEMA_VERSION = 1
"""``store_info.schema_version`` of the schema this build creates, reads and writes."""

SETUP_LOCK_ID = 0
"""The session-lock number (second key) taken, transaction-scoped, while a schema is set up;
session numbers start at 1."""

_CREATE = (
    """CREATE TABLE {s}.store_info (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  schema_version integer NOT NULL,
  store_id text NOT NULL
)""",
    """CREATE TABLE {s}.sessions (
  id text PRIMARY KEY,
  header text NOT NULL,
  incarnation text NOT NULL,
  event_count bigint NOT NULL CHECK (event_count >= 0),
  size_bytes bigint NOT NULL CHECK (size_bytes > 0),
  updated_at bigint NOT NULL
)""",
    """CREATE TABLE {s}.events (
  session_id text NOT NULL REFERENCES {s}.sessions (id) ON DELETE CASCADE,
  seq bigint NOT NULL CHECK (seq >= 0),
  line text,
  zline bytea,
  PRIMARY KEY (session_id, seq),
  CHECK ((line IS NULL) <> (zline IS NULL))
)""",
    "ALTER TABLE {s}.events ALTER COLUMN zline SET STORAGE EXTERNAL",
    """CREATE TABLE {s}.session_locks (
  session_id text PRIMARY KEY,
  lock_id integer GENERATED ALWAYS AS IDENTITY (MINVALUE 1) UNIQUE
)""",
    "INSERT INTO {s}.store_info (schema_version, store_id) VALUES (%(version)s, %(store_id)s)",
)

NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
"""The server's wall clock in epoch milliseconds (one clock for every host writing)."""


APPEND = f"""WITH u AS (
  UPDATE {{s}}.sessions
  SET event_count = %(next)s, size_bytes = size_bytes + %(size)s,
    updated_at = greatest(updated_at, {NOW_MS})
  WHERE id = %(id)s AND event_count = %(first)s
  RETURNING id
), i AS (
  INSERT INTO {{s}}.events (session_id, seq, line, zline)
  SELECT u.id, t.seq, t.line, t.zline
  FROM u, unnest(%(seqs)b::bigint[], %(lines)b::text[], %(zlines)b::bytea[]) AS t (seq, line, zline)
  RETURNING 1
)
SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM i)"""
"""One append, one statement (so one transaction of its own, one round trip): the contiguity
check is the condition ``event_count = first seq`` on the sessions row, which the ``UPDATE``
locks (as ``SELECT ... FOR UPDATE`` would) and moves to the new commit point; the rows are
inserted only when it matched, so a refused batch stores nothing. The arrays are bound in
binary (no quoting of the JSON text). Returns ``(sessions rows updated, events rows
inserted)``: ``(1, n)`` on success, ``(0, 0)`` when nothing was stored."""


def _render(template: str, schema: str) -> str:
    return sql.SQL(template).format(s=sql.Identifier(schema)).as_string(None)


@dataclass(frozen=True, slots=True)
class Statements:
    """The statements of one schema, as query strings (identifiers quoted by ``psycopg.sql``)."""

    create: tuple[str, ...]
    create_schema: str
    schema_tables: str
    select_store_info: str
    session_exists: str
    select_session: str
    select_sessions: str
    select_event_count: str
    insert_session: str
    append: str
    delete_beyond: str
    select_rows: str
    upsert_lock_id: str
    select_lock_id: str

    @classmethod
    def for_schema(cls, schema: str) -> Statements:
        """Render every statement for ``schema``."""

        def r(template: str) -> str:
            return _render(template, schema)

        return cls(
            create=tuple(r(t) for t in _CREATE),
            create_schema=r("CREATE SCHEMA IF NOT EXISTS {s}"),
            schema_tables=(
                "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n "
                "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'p')"
            ),
            select_store_info=r("SELECT schema_version, store_id FROM {s}.store_info"),
            session_exists=r("SELECT 1 FROM {s}.sessions WHERE id = %s"),
            select_session=r(
                "SELECT header, incarnation, event_count, size_bytes, updated_at "
                "FROM {s}.sessions WHERE id = %s"
            ),
            select_sessions=r(
                "SELECT id, header, incarnation, event_count, size_bytes, updated_at "
                "FROM {s}.sessions"
            ),
            select_event_count=r("SELECT event_count FROM {s}.sessions WHERE id = %s"),
            insert_session=r(
                "INSERT INTO {s}.sessions (id, header, incarnation, event_count, size_bytes, "
                f"updated_at) VALUES (%s, %s, %s, %s, %s, {NOW_MS}) "
                "ON CONFLICT (id) DO NOTHING RETURNING 1"
            ),
            append=r(APPEND),
            delete_beyond=r("DELETE FROM {s}.events WHERE session_id = %s AND seq >= %s"),
            select_rows=r(
                "SELECT seq, line, zline FROM {s}.events "
                "WHERE session_id = %s AND seq >= %s AND seq < %s ORDER BY seq"
            ),
            upsert_lock_id=r(
                "INSERT INTO {s}.session_locks (session_id) VALUES (%s) "
                "ON CONFLICT (session_id) DO NOTHING RETURNING lock_id"
            ),
            select_lock_id=r("SELECT lock_id FROM {s}.session_locks WHERE session_id = %s"),
        )
