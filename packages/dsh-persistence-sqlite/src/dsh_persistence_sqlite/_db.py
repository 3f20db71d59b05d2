"""Opening the database file: path safety, connection pragmas (read back), schema init/check.

A file that is not ours is refused before anything writes to it: the first 100 bytes (the SQLite
header, read as plain bytes) must be absent, or an SQLite header whose ``application_id`` is 0 or
ours; then the identity is checked through SQLite in a read transaction; only after that does
the connection switch the file to WAL (which writes the header) or initialize a pristine file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
import time
import urllib.parse
import uuid
from dataclasses import dataclass
from pathlib import Path

from dsh_persistence_sqlite import _sql as sql
from dsh_persistence_sqlite._errors import (
    ForeignDatabaseError,
    PragmaMismatchError,
    SchemaMismatchError,
    UnsafeDatabasePathError,
    UnsupportedSchemaError,
)

_JOURNAL_RETRY_S = 0.01


@dataclass(frozen=True, slots=True)
class OpenedDatabase:
    """A verified connection (autocommit; transactions are explicit), the store's id, and
    whether the connection is read-only (the file system is mounted read-only)."""

    connection: sqlite3.Connection
    store_id: str
    read_only: bool = False


def _on_read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _uri(path: Path, *, read_only: bool) -> str:
    """``mode=rw``; on a read-only mount ``mode=ro``, plus ``immutable=1`` when no ``-wal`` with
    content is beside it.

    SQLite reads a WAL database on read-only media only through an existing ``-shm`` (it cannot
    create one there) or as ``immutable``. Immutable ignores the ``-wal``, so it is used only when
    the ``-wal`` is absent or empty (the database file alone is the whole store, and nothing can
    write it on a read-only mount); a ``-wal`` with content is read through its ``-shm``, and
    without one the open fails (``SessionStorageError``) rather than serving a log that lacks
    its last commits.
    """
    base = "file:" + urllib.parse.quote(str(path))
    if not read_only:
        return base + "?mode=rw"
    try:
        wal_size = os.stat(path.with_name(path.name + "-wal")).st_size
    except FileNotFoundError:
        wal_size = 0
    return base + ("?mode=ro" if wal_size else "?mode=ro&immutable=1")


def _check_file(path: Path) -> os.stat_result | None:
    """lstat ``path``: ``None`` if absent; a symlink or non-regular file is refused."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeDatabasePathError(str(path), "is a symbolic link (refused, never followed)")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeDatabasePathError(str(path), "is not a regular file")
    return st


def _create_file(path: Path) -> None:
    """Create an empty database file with mode 0600 (an empty file is an empty database)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        return  # someone else created it meanwhile: checked again by the caller
    os.close(fd)


_SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100
_APPLICATION_ID_AT = 68  # big-endian 32-bit, per the file format's database header


def _check_header(path: Path) -> None:
    """Refuse, from its first bytes alone, a file that is not an SQLite database or is another
    application's (a non-zero ``application_id`` that is not ours). An empty file passes (a
    pristine database); an id of 0 passes to the check through SQLite (ours may not be
    checkpointed into the file yet)."""
    flags = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        head = os.read(fd, _HEADER_SIZE)
    finally:
        os.close(fd)
    if not head:
        return
    if len(head) < _HEADER_SIZE or not head.startswith(_SQLITE_MAGIC):
        raise ForeignDatabaseError(
            str(path), "not an SQLite database (the file does not start with an SQLite header)"
        )
    application_id = int.from_bytes(head[_APPLICATION_ID_AT : _APPLICATION_ID_AT + 4], "big")
    if application_id not in (0, sql.APPLICATION_ID):
        raise ForeignDatabaseError(str(path), _foreign_reason(application_id))


def _foreign_reason(application_id: int) -> str:
    what = (
        f"its application_id is {application_id:#010x}"
        if application_id
        else "it holds tables but has no application_id"
    )
    return f"not a dsh session database ({what}; expected {sql.APPLICATION_ID:#010x})"


def _pragma(connection: sqlite3.Connection, statement: str) -> object:
    row = connection.execute(statement).fetchone()
    return None if row is None else row[0]


def _expect(path: Path, name: str, got: object, want: object) -> None:
    if got != want:
        raise PragmaMismatchError(str(path), f"PRAGMA {name} reads back {got!r}, expected {want!r}")


def _set_journal_wal(connection: sqlite3.Connection, path: Path, deadline: float) -> None:
    while True:
        try:
            mode = _pragma(connection, sql.PRAGMA_JOURNAL_MODE_WAL)
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) and "busy" not in str(error):
                raise
            if time.monotonic() >= deadline:
                raise
            time.sleep(_JOURNAL_RETRY_S)
            continue
        _expect(path, "journal_mode", str(mode).lower(), "wal")
        return


def configure(connection: sqlite3.Connection, path: Path, busy_timeout_ms: int) -> None:
    """Set every pragma this backend relies on and read each one back."""
    configure_connection(connection, path, busy_timeout_ms)
    configure_journal(connection, path, busy_timeout_ms)


def configure_connection(connection: sqlite3.Connection, path: Path, busy_timeout_ms: int) -> None:
    """The settings of this connection alone (nothing is written to the file)."""
    connection.execute(sql.PRAGMA_BUSY_TIMEOUT_SET.format(ms=busy_timeout_ms))
    _expect(path, "busy_timeout", _pragma(connection, sql.READ_BUSY_TIMEOUT), busy_timeout_ms)
    connection.execute(sql.PRAGMA_TRUSTED_SCHEMA_OFF)
    _expect(path, "trusted_schema", _pragma(connection, sql.READ_TRUSTED_SCHEMA), 0)
    connection.execute(sql.PRAGMA_FOREIGN_KEYS_ON)
    _expect(path, "foreign_keys", _pragma(connection, sql.READ_FOREIGN_KEYS), 1)
    connection.execute(sql.PRAGMA_MMAP_SIZE_0)
    _expect(path, "mmap_size", _pragma(connection, sql.READ_MMAP_SIZE), 0)


def configure_journal(connection: sqlite3.Connection, path: Path, busy_timeout_ms: int) -> None:
    """WAL (recorded in the file's header: only for a file known to be ours or pristine) and
    ``synchronous=FULL``."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    _set_journal_wal(connection, path, deadline)
    _expect(path, "journal_mode", str(_pragma(connection, sql.READ_JOURNAL_MODE)).lower(), "wal")
    connection.execute(sql.PRAGMA_SYNCHRONOUS_FULL)
    _expect(path, "synchronous", _pragma(connection, sql.READ_SYNCHRONOUS), 2)


def _normalized(statement: str | None) -> str:
    return " ".join((statement or "").split())


def _initialize(connection: sqlite3.Connection) -> None:
    for statement in sql.TABLES.values():
        connection.execute(statement)
    connection.execute(sql.INSERT_STORE_INFO, (uuid.uuid4().hex,))
    connection.execute(sql.SET_APPLICATION_ID)
    connection.execute(sql.SET_USER_VERSION)


def _verify_schema(connection: sqlite3.Connection, path: Path) -> None:
    objects = {
        name: sql_text
        for kind, name, sql_text in connection.execute(sql.READ_USER_OBJECTS)
        if kind == "table"
    }
    strict = {
        row[1]: bool(row[5])
        for row in connection.execute(sql.READ_TABLE_LIST)
        if row[0] == "main" and row[2] == "table"
    }
    for name, statement in sql.TABLES.items():
        if name not in objects:
            raise SchemaMismatchError(str(path), f"table {name!r} is missing")
        if not strict.get(name, False):
            raise SchemaMismatchError(str(path), f"table {name!r} is not STRICT")
        if _normalized(objects[name]) != _normalized(statement):
            raise SchemaMismatchError(
                str(path), f"table {name!r} was changed: {objects[name]!r} is not this schema"
            )


def _check_identity(connection: sqlite3.Connection, path: Path, *, initialize: bool) -> bool:
    """Refuse a database that is not this build's store; a pristine one is initialized when
    ``initialize`` (inside a write transaction), else left as it is. Whether it was pristine."""
    application_id = int(_pragma(connection, sql.READ_APPLICATION_ID) or 0)  # type: ignore[call-overload]
    user_version = int(_pragma(connection, sql.READ_USER_VERSION) or 0)  # type: ignore[call-overload]
    has_objects = connection.execute(sql.READ_USER_OBJECTS).fetchone() is not None
    if application_id == 0 and user_version == 0 and not has_objects:
        if initialize:
            _initialize(connection)
        return True
    if application_id != sql.APPLICATION_ID:
        raise ForeignDatabaseError(str(path), _foreign_reason(application_id))
    if user_version != sql.SCHEMA_VERSION:
        if user_version > sql.SCHEMA_VERSION:
            reason = (
                f"schema version {user_version} was written by a newer dsh-persistence-sqlite "
                f"(this build handles {sql.SCHEMA_VERSION}); upgrade to open it"
            )
        else:
            reason = (
                f"schema version {user_version} is not one this build handles "
                f"({sql.SCHEMA_VERSION}) and no migration exists for it"
            )
        raise UnsupportedSchemaError(str(path), reason, user_version=user_version)
    _verify_schema(connection, path)
    return False


def _store_id(connection: sqlite3.Connection, path: Path) -> str:
    row = connection.execute(sql.SELECT_STORE_ID).fetchone()
    if row is None or not isinstance(row[0], str):
        raise SchemaMismatchError(str(path), "store_info holds no store id")
    return row[0]


def open_database(path: Path, *, busy_timeout_ms: int) -> OpenedDatabase:
    """Open (creating it 0600 if absent) and verify the session database at ``path``."""
    before = _check_file(path)
    if before is None:
        _create_file(path)
        before = _check_file(path)
        if before is None:
            raise UnsafeDatabasePathError(str(path), "vanished while it was being created")
    _check_header(path)
    read_only = _on_read_only_mount(path)
    connection = sqlite3.connect(
        _uri(path, read_only=read_only),
        uri=True,
        isolation_level=None,
        check_same_thread=False,
        timeout=busy_timeout_ms / 1000,
    )
    try:
        after = _check_file(path)
        if after is None or (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            raise UnsafeDatabasePathError(str(path), "was replaced while it was being opened")
        configure_connection(connection, path, busy_timeout_ms)
        try:
            connection.execute(sql.BEGIN_DEFERRED)  # read only: nothing is written before WAL
            try:
                pristine = _check_identity(connection, path, initialize=False)
                store_id = None if pristine else _store_id(connection, path)
            finally:
                with contextlib.suppress(sqlite3.Error):
                    connection.execute(sql.ROLLBACK)
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError):
                raise
            raise ForeignDatabaseError(str(path), f"not an SQLite database ({error})") from error
        if read_only:
            if store_id is None:
                raise OSError(errno.EROFS, "a pristine database cannot be initialized", str(path))
            return OpenedDatabase(connection, store_id, read_only=True)
        configure_journal(connection, path, busy_timeout_ms)
        if store_id is None:  # pristine: initialize it (unless another process just did)
            connection.execute(sql.BEGIN_IMMEDIATE)
            try:
                _check_identity(connection, path, initialize=True)
                store_id = _store_id(connection, path)
                connection.execute(sql.COMMIT)
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    connection.execute(sql.ROLLBACK)
                raise
    except BaseException:
        connection.close()
        raise
    return OpenedDatabase(connection, store_id)
