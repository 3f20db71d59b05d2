"""Every SQL statement of the backend, as named constants (values are always bound parameters).

The schema is ``STRICT`` throughout. ``sessions`` holds one row per materialized session (the
header as columns, plus ``incarnation`` and ``rewrites``, which with the last row's ``last_seq``
make the opaque snapshot revision: appends only insert rows, and the rare rewrite — dropping a
torn final row — bumps ``rewrites``);
``events`` holds the physical rows of each log: one row per event, or one packed row standing for
a run of chunk events (``seq``..``last_seq``). ``line`` is the row's canonical JSON line, stored
as TEXT, or as a zstd frame (BLOB) when ``compressed = 1``.
"""

from __future__ import annotations

APPLICATION_ID = 0x44535059
"""``PRAGMA application_id`` of a dsh-py session database (ASCII ``DSPY``)."""

SCHEMA_VERSION = 1
"""``PRAGMA user_version`` of the schema this build reads and writes."""

CREATE_STORE_INFO = """CREATE TABLE store_info (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  store_id TEXT NOT NULL
) STRICT"""

CREATE_SESSIONS = """CREATE TABLE sessions (
  id TEXT PRIMARY KEY NOT NULL,
  version INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  cwd TEXT,
  parent_session TEXT,
  origin TEXT,
  delegation_depth INTEGER,
  agent_preset TEXT,
  is_seeded INTEGER NOT NULL CHECK (is_seeded IN (0, 1)),
  seed_length INTEGER NOT NULL CHECK (seed_length >= 0),
  incarnation TEXT NOT NULL,
  rewrites INTEGER NOT NULL CHECK (rewrites >= 0),
  updated_at INTEGER NOT NULL
) STRICT"""

CREATE_EVENTS = """CREATE TABLE events (
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL CHECK (seq >= 0),
  last_seq INTEGER NOT NULL CHECK (last_seq >= seq),
  type TEXT NOT NULL,
  time INTEGER NOT NULL,
  compressed INTEGER NOT NULL CHECK (compressed IN (0, 1)),
  line ANY NOT NULL CHECK (typeof(line) = CASE compressed WHEN 0 THEN 'text' ELSE 'blob' END),
  written_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, seq)
) STRICT"""

TABLES: dict[str, str] = {
    "store_info": CREATE_STORE_INFO,
    "sessions": CREATE_SESSIONS,
    "events": CREATE_EVENTS,
}
"""Table name to its exact ``CREATE`` statement (compared with ``sqlite_schema.sql``)."""

# -- connection setup (PRAGMA takes no bound parameters; these are constants) ------------------

PRAGMA_TRUSTED_SCHEMA_OFF = "PRAGMA trusted_schema = OFF"
PRAGMA_FOREIGN_KEYS_ON = "PRAGMA foreign_keys = ON"
PRAGMA_MMAP_SIZE_0 = "PRAGMA mmap_size = 0"
PRAGMA_JOURNAL_MODE_WAL = "PRAGMA journal_mode = WAL"
PRAGMA_SYNCHRONOUS_FULL = "PRAGMA synchronous = FULL"
PRAGMA_BUSY_TIMEOUT_SET = "PRAGMA busy_timeout = {ms:d}"  # formatted with an int only
READ_TRUSTED_SCHEMA = "PRAGMA trusted_schema"
READ_FOREIGN_KEYS = "PRAGMA foreign_keys"
READ_MMAP_SIZE = "PRAGMA mmap_size"
READ_JOURNAL_MODE = "PRAGMA journal_mode"
READ_SYNCHRONOUS = "PRAGMA synchronous"
READ_BUSY_TIMEOUT = "PRAGMA busy_timeout"
READ_APPLICATION_ID = "PRAGMA application_id"
READ_USER_VERSION = "PRAGMA user_version"
SET_APPLICATION_ID = f"PRAGMA application_id = {APPLICATION_ID:d}"
SET_USER_VERSION = f"PRAGMA user_version = {SCHEMA_VERSION:d}"
READ_TABLE_LIST = "PRAGMA table_list"
READ_USER_OBJECTS = (
    "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
)

BEGIN_IMMEDIATE = "BEGIN IMMEDIATE"
BEGIN_DEFERRED = "BEGIN DEFERRED"
COMMIT = "COMMIT"
ROLLBACK = "ROLLBACK"

INSERT_STORE_INFO = "INSERT INTO store_info (singleton, store_id) VALUES (1, ?)"
SELECT_STORE_ID = "SELECT store_id FROM store_info WHERE singleton = 1"

# -- sessions --------------------------------------------------------------------------------

INSERT_SESSION = """INSERT INTO sessions (
  id, version, created_at, cwd, parent_session, origin, delegation_depth, agent_preset,
  is_seeded, seed_length, incarnation, rewrites, updated_at
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)"""

SESSION_EXISTS = "SELECT 1 FROM sessions WHERE id = ?"

_SESSION_COLUMNS = """SELECT s.id, s.version, s.created_at, s.cwd, s.parent_session, s.origin,
  s.delegation_depth, s.agent_preset, s.is_seeded, s.seed_length, s.incarnation, s.rewrites,
  s.updated_at, e.last_seq, e.written_at
FROM sessions AS s LEFT JOIN events AS e ON e.session_id = s.id
  AND e.seq = (SELECT max(l.seq) FROM events AS l WHERE l.session_id = s.id)"""

SELECT_SESSION = f"{_SESSION_COLUMNS} WHERE s.id = ?"
"""One session's header columns, revision parts, and its last event row's seq and time."""

SELECT_SESSIONS = _SESSION_COLUMNS
"""``SELECT_SESSION`` for every session (``list``)."""

UPDATE_AFTER_REWRITE = """UPDATE sessions SET rewrites = rewrites + 1, updated_at = ?
WHERE id = ?"""
"""After a torn final row was dropped: the revision must change even if ``last_seq`` ends
where the dropped row's did."""

# -- events ----------------------------------------------------------------------------------

INSERT_ROW = """INSERT INTO events
  (session_id, seq, last_seq, type, time, compressed, line, written_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)"""
"""One physical row; the line is bound as TEXT (``str``), or as a BLOB when compressed (the
table's ``CHECK`` refuses any other pairing)."""

DELETE_ROW = "DELETE FROM events WHERE session_id = ? AND seq = ?"

SELECT_LAST_ROW_SEQ = "SELECT seq FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1"

SELECT_ROWS_FROM = """SELECT seq, last_seq, compressed, line FROM events
WHERE session_id = ? AND seq >= ? AND last_seq >= ? ORDER BY seq"""
"""Rows covering seqs from an offset: (id, offset - max pack + 1, offset). ``line`` comes back
as ``str`` (the parser reads a ``str`` faster than the same ``bytes``) or, compressed, ``bytes``."""

SELECT_ROWS_RANGE = """SELECT seq, last_seq, compressed, line FROM events
WHERE session_id = ? AND seq >= ? AND last_seq >= ? AND seq < ? ORDER BY seq"""
"""``SELECT_ROWS_FROM`` bounded above: (id, offset - max pack + 1, offset, end)."""
