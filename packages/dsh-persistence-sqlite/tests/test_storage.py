"""Issue 24 §1.7: storage failures are ``SessionStorageError`` naming the session, the operation
and the database — a full file system (a small tmpfs), a read-only mount, a database locked by
another process past ``busy_timeout_ms`` — and what was committed before is kept."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence import SessionStorageError
from dsh_persistence_sqlite import SqlitePersistence
from dsh_persistence_sqlite._storage import storage_error
from dsh_session import make_event

HOLDER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
sys.stdin.readline()
connection.execute("ROLLBACK")
"""
"""A second process holding the database's write lock until told to let go (a line on stdin)."""

WRITER_THEN_KILLED = """
import asyncio, os, signal, sys
sys.path.insert(0, sys.argv[2])
from conftest import Make
from dsh_persistence_sqlite import SqlitePersistence

async def main():
    store = SqlitePersistence(sys.argv[1])
    handle = await store.create(Make.header("s"))
    await handle.append(Make.one_turn())
    await handle.append(Make.one_turn(6, 2))
    os.kill(os.getpid(), signal.SIGKILL)  # no close: the -wal and -shm stay, unmerged

asyncio.run(main())
"""

FILE_SIZE_LIMITED = """
import asyncio, json, os, resource, signal, sys
sys.path.insert(0, sys.argv[2])
from conftest import Make
from test_storage import _big_turn
from dsh_persistence import SessionStorageError
from dsh_persistence_sqlite import SqlitePersistence

async def main():
    store = SqlitePersistence(sys.argv[1], compression=False)
    handle = await store.create(Make.header("s"))
    await handle.append(Make.one_turn())
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(f"{sys.argv[1]}-wal") + 65536, -1))
    batch = _big_turn(6, 400_000)
    try:
        await handle.append(batch)
        error = None
    except SessionStorageError as caught:
        error = [caught.session_id, caught.operation, caught.artifact]
    kept = len(await handle.read())
    resource.setrlimit(resource.RLIMIT_FSIZE, (-1, -1))
    await handle.append(batch)
    await store.aclose()
    fresh = SqlitePersistence(sys.argv[1])
    async with await fresh.open("s", "read") as reader:
        final = len(await reader.read())
    await fresh.aclose()
    print(json.dumps({"error": error, "kept": kept, "final": final}))

asyncio.run(main())
"""
"""A write that the file size limit (RLIMIT_FSIZE) refuses: a full disk without root or mount."""


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted for this test (needs root and mount(8))."""
    point = tmp_path / "mnt"
    point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (the locked-database tests still run)")
    try:
        _mount("-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(point))
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or error
        pytest.skip(f"cannot mount a tmpfs here ({detail}); the locked-database tests still run")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False, capture_output=True)


def _big_turn(start: int, size: int) -> list[Any]:
    text = os.urandom(size // 2).hex()  # incompressible: the bytes really hit the disk
    return [
        make_event("turn/start", start, 1, {"turn": 9}),
        make_event(
            "user/message",
            start + 1,
            1,
            {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}},
            surface_op="append",
        ),
        make_event("turn/end", start + 2, 1, {"turn": 9, "reason": {"kind": "completed"}}),
    ]


def _fill(directory: Path) -> Path:
    """Write a file until the file system is full; its path."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    code = None
    try:
        while code is None:
            try:
                os.write(fd, b"\0" * 65536)
            except OSError as error:
                code = error.errno
    finally:
        os.close(fd)
    assert code == errno.ENOSPC
    return filler


def _write_then_get_killed(path: Path) -> None:
    """A child process writes two turns and is SIGKILLed: its commits stay in the -wal."""
    child = subprocess.run(
        [sys.executable, "-c", WRITER_THEN_KILLED, str(path), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == -9, child.stderr
    assert os.path.getsize(f"{path}-wal") > 0  # the commits are in the -wal alone


@contextlib.contextmanager
def _write_lock_held_by_another_process(path: Path) -> Iterator[None]:
    """Another process holds the database's write lock (BEGIN IMMEDIATE) for the block."""
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None
        assert holder.stdin is not None
        try:
            assert holder.stdout.readline() == "holding\n"
            yield
            holder.stdin.write("release\n")
            holder.stdin.flush()
            assert holder.wait(timeout=60) == 0
        finally:
            if holder.poll() is None:
                holder.kill()


def _expect_storage_error(error: SessionStorageError, session_id: str, operation: str) -> None:
    assert (error.session_id, error.operation) == (session_id, operation)
    assert error.artifact is not None
    assert error.artifact.endswith("sessions.db")
    assert error.artifact in str(error)


# -- a full file system ------------------------------------------------------------------------


async def test_a_full_disk_is_a_storage_error_that_keeps_every_event_and_a_retry_works(
    small_fs: Path, mk: Any
) -> None:
    path = small_fs / "data" / "sessions.db"
    store = SqlitePersistence(path, compression=False)
    handle = await store.create(mk.header("s"))
    await handle.append(mk.one_turn())
    filler = _fill(small_fs)
    batch = _big_turn(6, 400_000)
    with pytest.raises(SessionStorageError) as info:
        await handle.append(batch)
    _expect_storage_error(info.value, "s", "append")
    assert info.value.errno == errno.ENOSPC
    assert len(await handle.read()) == 6  # what was committed stays, nothing of the batch
    unflushed = await store.create(mk.header("new"))
    with pytest.raises(SessionStorageError) as info:
        await unflushed.flush()
    _expect_storage_error(info.value, "new", "flush")
    filler.unlink()
    await handle.append(batch)  # the same batch, once there is space
    await unflushed.flush()
    await store.aclose()
    fresh = SqlitePersistence(path)
    async with await fresh.open("s", "read") as reader:
        assert [e.seq for e in await reader.read()] == list(range(9))
    assert {s.header.id for s in await fresh.list()} == {"s", "new"}
    await fresh.aclose()


def _run_with_a_file_size_limit(path: Path) -> dict[str, Any]:
    child = subprocess.run(
        [sys.executable, "-c", FILE_SIZE_LIMITED, str(path), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    result: dict[str, Any] = json.loads(child.stdout)
    return result


async def test_a_write_refused_by_the_file_size_limit_is_a_storage_error_and_a_retry_works(
    db_path: Path,
) -> None:
    """The full-disk test without root: RLIMIT_FSIZE makes the -wal write fail (EFBIG)."""
    db_path.parent.mkdir(parents=True)
    result = _run_with_a_file_size_limit(db_path)
    assert result == {"error": ["s", "append", str(db_path)], "kept": 6, "final": 9}


# -- a read-only mount -------------------------------------------------------------------------


async def test_a_read_only_mount_reads_every_event_and_refuses_writes_typed(
    small_fs: Path, mk: Any
) -> None:
    path = small_fs / "data" / "sessions.db"
    store = SqlitePersistence(path)
    async with await store.create(mk.header("s")) as handle:
        await handle.append(mk.one_turn())
    await store.aclose()  # the last connection merges and removes -wal and -shm
    assert sorted(os.listdir(path.parent)) == ["sessions.db", "sessions.db-locks"]
    _mount("-o", "remount,ro", str(small_fs))
    fresh = SqlitePersistence(path)
    assert [s.header.id for s in await fresh.list()] == ["s"]
    assert (await fresh.stat("s")).event_count == 6  # type: ignore[union-attr]
    async with await fresh.open("s", "read") as reader:
        assert len(await reader.read()) == 6
    with pytest.raises(SessionStorageError) as info:
        await fresh.create(mk.header("t"))
    _expect_storage_error(info.value, "t", "create")
    assert info.value.errno == errno.EROFS
    with pytest.raises(SessionStorageError) as info:
        await fresh.open("s", "write")
    _expect_storage_error(info.value, "s", "open")
    await fresh.aclose()


async def test_a_read_only_mount_reads_the_commits_still_in_the_wal(
    small_fs: Path, mk: Any
) -> None:
    path = small_fs / "data" / "sessions.db"
    _write_then_get_killed(path)
    _mount("-o", "remount,ro", str(small_fs))
    fresh = SqlitePersistence(path)
    async with await fresh.open("s", "read") as reader:
        assert len(await reader.read()) == 12  # not the file alone (immutable would say 0)
    await fresh.aclose()


async def test_a_read_only_mount_without_the_shm_fails_typed_instead_of_losing_commits(
    small_fs: Path, mk: Any
) -> None:
    path = small_fs / "data" / "sessions.db"
    _write_then_get_killed(path)
    os.unlink(f"{path}-shm")
    _mount("-o", "remount,ro", str(small_fs))
    fresh = SqlitePersistence(path)
    with pytest.raises(SessionStorageError) as info:
        await fresh.list()
    _expect_storage_error(info.value, "", "list")
    await fresh.aclose()


async def test_a_database_that_cannot_be_created_is_a_storage_error(
    small_fs: Path,
) -> None:
    _mount("-o", "remount,ro", str(small_fs))
    store = SqlitePersistence(small_fs / "sessions.db")
    with pytest.raises(SessionStorageError) as info:
        await store.stat("s")
    _expect_storage_error(info.value, "s", "stat")
    assert info.value.errno == errno.EROFS
    await store.aclose()


# -- a database locked by another process ------------------------------------------------------


async def test_a_write_lock_held_past_the_busy_timeout_is_a_storage_error_and_a_retry_works(
    db_path: Path, mk: Any
) -> None:
    store = SqlitePersistence(db_path, busy_timeout_ms=50)
    handle = await store.create(mk.header("s"))
    await handle.append(mk.one_turn())
    with _write_lock_held_by_another_process(db_path):
        with pytest.raises(SessionStorageError, match="database is locked") as info:
            await handle.append(mk.one_turn(6, 2))
        _expect_storage_error(info.value, "s", "append")
        assert len(await handle.read()) == 6  # reads go on while another process writes
    await handle.append(mk.one_turn(6, 2))
    assert len(await handle.read()) == 12
    await store.aclose()


def test_an_error_that_is_not_about_storage_stays_what_it_is(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "x.db")
    try:
        with pytest.raises(sqlite3.OperationalError) as info:
            connection.execute("SELECT * FROM no_such_table")
    finally:
        connection.close()
    assert storage_error(info.value, "s", "read", "/x.db") is None
    assert storage_error(ValueError("x"), "s", "read", "/x.db") is None
    translated = storage_error(
        PermissionError(errno.EACCES, "denied", "/x.db-locks"), "", "list", "/x.db"
    )
    assert translated is not None
    assert (translated.errno, translated.artifact) == (errno.EACCES, "/x.db")
    assert "/x.db-locks" in translated.reason
