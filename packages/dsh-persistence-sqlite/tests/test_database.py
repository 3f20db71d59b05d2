"""The database file: created 0600, verified pragmas, and refusal of anything that is not ours."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence_sqlite import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    ForeignDatabaseError,
    PragmaMismatchError,
    SchemaMismatchError,
    SqlitePersistence,
    SqliteStoreError,
    UnsafeDatabasePathError,
    UnsupportedSchemaError,
    _db,
    _sql,
)


async def _touch(path: Path) -> None:
    store = SqlitePersistence(path)
    try:
        await store.list()
    finally:
        await store.aclose()


def _write_text_file(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is a text file, not a database\n" * 200)


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


async def test_a_new_database_and_its_wal_files_are_mode_0600(db_path: Path, mk: Any) -> None:
    store = SqlitePersistence(db_path)
    async with await store.create(mk.header("s")) as handle:
        await handle.flush()
        modes = {
            suffix: _mode(db_path.with_name(db_path.name + suffix))
            for suffix in ("", "-wal", "-shm")
        }
    await store.aclose()
    assert modes == {"": 0o600, "-wal": 0o600, "-shm": 0o600}
    assert _mode(db_path.parent) == 0o700


async def test_the_lock_directory_and_lock_files_are_private(db_path: Path, mk: Any) -> None:
    store = SqlitePersistence(db_path)
    async with await store.create(mk.header("s")) as handle:
        await handle.append(mk.one_turn())
    await store.aclose()
    lock_dir = db_path.with_name(db_path.name + "-locks")
    assert stat.S_IMODE(os.stat(lock_dir).st_mode) == 0o700
    (lock,) = os.listdir(lock_dir)
    assert stat.S_IMODE(os.stat(lock_dir / lock).st_mode) == 0o600


async def test_a_session_id_never_reaches_a_lock_file_name(db_path: Path, mk: Any) -> None:
    store = SqlitePersistence(db_path)
    async with await store.create(mk.header("../../etc/passwd")) as handle:
        await handle.append(mk.one_turn())
    await store.aclose()
    (name,) = os.listdir(db_path.with_name(db_path.name + "-locks"))
    assert name.endswith(".lock")
    assert "passwd" not in name
    assert "/" not in name


async def test_a_new_database_has_our_identity_and_strict_tables(db_path: Path) -> None:
    await _touch(db_path)
    raw = _raw(db_path)
    assert raw.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    strict = {row[1]: row[5] for row in raw.execute("PRAGMA table_list") if row[2] == "table"}
    assert {strict[name] for name in ("store_info", "sessions", "events")} == {1}
    raw.close()


async def test_wal_journal_mode_persists_in_the_file(db_path: Path) -> None:
    await _touch(db_path)
    raw = _raw(db_path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    raw.close()


def test_every_pragma_is_read_back_and_a_mismatch_is_refused(tmp_path: Path) -> None:
    class Lying:
        """A connection whose synchronous setting does not stick."""

        def __init__(self, real: sqlite3.Connection) -> None:
            self.real = real
            self.seen: list[str] = []

        def execute(self, statement: str, *args: Any) -> Any:
            self.seen.append(statement)
            if statement == _sql.READ_SYNCHRONOUS:
                return self.real.execute("SELECT 1")
            return self.real.execute(statement, *args)

    real = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    lying = Lying(real)
    with pytest.raises(PragmaMismatchError, match=r"synchronous.*expected 2") as info:
        _db.configure(lying, tmp_path / "x.db", 1234)  # type: ignore[arg-type]
    assert str(tmp_path / "x.db") in str(info.value)
    for read_back in (
        _sql.READ_BUSY_TIMEOUT,
        _sql.READ_TRUSTED_SCHEMA,
        _sql.READ_FOREIGN_KEYS,
        _sql.READ_MMAP_SIZE,
        _sql.READ_JOURNAL_MODE,
        _sql.READ_SYNCHRONOUS,
    ):
        assert read_back in lying.seen
    real.close()


def test_a_verified_connection_has_every_pragma_set(tmp_path: Path) -> None:
    opened = _db.open_database(tmp_path / "v.db", busy_timeout_ms=1234)
    connection = opened.connection
    values = {
        name: connection.execute(f"PRAGMA {name}").fetchone()[0]
        for name in (
            "journal_mode",
            "synchronous",
            "foreign_keys",
            "trusted_schema",
            "busy_timeout",
        )
    }
    connection.close()
    assert values == {
        "journal_mode": "wal",
        "synchronous": 2,
        "foreign_keys": 1,
        "trusted_schema": 0,
        "busy_timeout": 1234,
    }


async def test_a_foreign_application_id_is_refused_naming_the_path(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    raw = _raw(db_path)
    raw.execute("PRAGMA application_id = 1234")
    raw.execute("CREATE TABLE t (x)")
    raw.close()
    with pytest.raises(ForeignDatabaseError, match="application_id") as info:
        await _touch(db_path)
    assert info.value.path == str(db_path)
    assert str(db_path) in str(info.value)


async def test_a_database_with_tables_but_no_application_id_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    raw = _raw(db_path)
    raw.execute("CREATE TABLE notes (body TEXT)")
    raw.close()
    with pytest.raises(ForeignDatabaseError, match="no application_id"):
        await _touch(db_path)


async def test_a_file_that_is_not_sqlite_is_refused(db_path: Path) -> None:
    _write_text_file(db_path)
    with pytest.raises(ForeignDatabaseError, match="not an SQLite database"):
        await _touch(db_path)


async def test_a_newer_schema_version_says_upgrade(db_path: Path) -> None:
    await _touch(db_path)
    raw = _raw(db_path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(UnsupportedSchemaError, match="upgrade") as info:
        await _touch(db_path)
    assert info.value.user_version == SCHEMA_VERSION + 1


async def test_an_unknown_older_schema_version_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    raw = _raw(db_path)
    raw.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    raw.execute("PRAGMA user_version = 0")
    raw.execute("CREATE TABLE sessions (id TEXT) STRICT")
    raw.close()
    with pytest.raises(UnsupportedSchemaError, match="schema version 0"):
        await _touch(db_path)


def _ours_with(path: Path, tables: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = _raw(path)
    for statement in tables.values():
        raw.execute(statement)
    raw.execute("INSERT INTO store_info (singleton, store_id) VALUES (1, 'x')")
    raw.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    raw.close()


async def test_a_non_strict_table_is_refused(db_path: Path) -> None:
    tables = dict(_sql.TABLES)
    tables["events"] = tables["events"].removesuffix(" STRICT")
    _ours_with(db_path, tables)
    with pytest.raises(SchemaMismatchError, match="'events' is not STRICT"):
        await _touch(db_path)


async def test_a_changed_table_is_refused(db_path: Path) -> None:
    tables = dict(_sql.TABLES)
    tables["sessions"] = tables["sessions"].replace(
        "updated_at INTEGER NOT NULL", "updated_at INTEGER NOT NULL,\n  extra TEXT"
    )
    assert tables["sessions"] != _sql.TABLES["sessions"]
    _ours_with(db_path, tables)
    with pytest.raises(SchemaMismatchError, match="'sessions' was changed"):
        await _touch(db_path)


async def test_a_missing_table_is_refused(db_path: Path) -> None:
    tables = {k: v for k, v in _sql.TABLES.items() if k != "events"}
    _ours_with(db_path, tables)
    with pytest.raises(SchemaMismatchError, match="'events' is missing"):
        await _touch(db_path)


async def test_a_symlink_is_refused_and_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "real.db"
    await _touch(target)
    before = target.read_bytes()
    link = tmp_path / "link.db"
    link.symlink_to(target)
    with pytest.raises(UnsafeDatabasePathError, match="symbolic link") as info:
        await _touch(link)
    assert info.value.path == str(link)
    assert target.read_bytes() == before


async def test_a_dangling_symlink_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    link = tmp_path / "link.db"
    link.symlink_to(tmp_path / "nowhere.db")
    with pytest.raises(UnsafeDatabasePathError, match="symbolic link"):
        await _touch(link)
    assert not (tmp_path / "nowhere.db").exists()


async def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(UnsafeDatabasePathError, match="not a regular file"):
        await _touch(tmp_path / "dir.db")


def test_store_errors_share_one_base_and_pickle() -> None:
    import pickle

    error = UnsupportedSchemaError("/x.db", "why", user_version=7)
    again = pickle.loads(pickle.dumps(error))
    assert isinstance(again, SqliteStoreError)
    assert (again.path, again.reason, again.user_version) == ("/x.db", "why", 7)


@pytest.mark.parametrize("path", ["", ":memory:", "file:x.db?mode=memory"])
def test_a_path_that_is_not_a_file_is_refused_at_construction(path: str) -> None:
    with pytest.raises(ValueError, match="database file"):
        SqlitePersistence(path)


def test_the_database_is_not_opened_by_the_constructor(db_path: Path) -> None:
    SqlitePersistence(db_path)
    assert not db_path.exists()


def _files_and_bytes(path: Path) -> dict[str, bytes]:
    """The database file and every sibling SQLite may create (-wal, -shm, -journal)."""
    return {p.name: p.read_bytes() for p in sorted(path.parent.iterdir())}


def _write(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(content)


def _foreign(path: Path, *, application_id: int, wal: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = _raw(path)
    if wal:
        raw.execute("PRAGMA journal_mode = WAL")
    if application_id:
        raw.execute(f"PRAGMA application_id = {application_id}")
    raw.execute("CREATE TABLE notes (body TEXT)")
    raw.execute("INSERT INTO notes VALUES ('keep me')")
    raw.close()


@pytest.mark.parametrize("application_id", [0x12345678, 0])
async def test_a_foreign_database_is_refused_before_anything_writes_to_it(
    db_path: Path, application_id: int
) -> None:
    _foreign(db_path, application_id=application_id)
    before = _files_and_bytes(db_path)
    assert list(before) == [db_path.name]  # a rollback-journal database: no -wal, no -shm
    with pytest.raises(ForeignDatabaseError) as info:
        await _touch(db_path)
    assert info.value.path == str(db_path)
    assert _files_and_bytes(db_path) == before  # not switched to WAL, no file left beside it
    raw = _raw(db_path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    raw.close()


async def test_a_foreign_wal_database_is_refused_without_opening_it(db_path: Path) -> None:
    _foreign(db_path, application_id=0x12345678, wal=True)
    before = _files_and_bytes(db_path)
    assert list(before) == [db_path.name]  # its last connection closed: -wal and -shm removed
    with pytest.raises(ForeignDatabaseError, match="0x12345678"):
        await _touch(db_path)
    assert _files_and_bytes(db_path) == before


@pytest.mark.parametrize(
    "content",
    [b"this is a text file, not a database\n" * 200, b"SQLite format 3\x00 but short", b"x"],
)
async def test_a_file_that_is_not_a_database_is_refused_by_path_and_left_unchanged(
    db_path: Path, content: bytes
) -> None:
    _write(db_path, content)
    with pytest.raises(ForeignDatabaseError, match="not an SQLite database") as info:
        await _touch(db_path)
    assert info.value.path == str(db_path)
    assert str(db_path) in str(info.value)
    assert _files_and_bytes(db_path) == {db_path.name: content}


async def test_an_empty_file_is_a_pristine_database_and_becomes_ours(db_path: Path) -> None:
    _write(db_path, b"")
    await _touch(db_path)
    raw = _raw(db_path)
    assert raw.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    raw.close()
