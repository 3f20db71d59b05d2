"""Storage failures (issue 24 §1.7, rule R5) and a log taken away from its writer (§1.9).

A full disk and a read-only filesystem are real: a 1 MiB tmpfs mounted for the test (root
only; elsewhere these tests skip, saying so, and ``test_backend``'s RLIMIT_FSIZE test still
covers a failed write). ENOSPC/EROFS become ``SessionStorageError`` naming session, operation
and path; every flushed event stays, and a retry after space is freed works.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence import SessionOwnershipLostError, SessionStorageError
from dsh_session import SessionEvent, make_event


@contextlib.contextmanager
def mounted_tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, mounted for this test."""
    with mounted_tmpfs(tmp_path / "fs", "1m") as where:
        yield where


def fill(directory: Path, leave: int = 0) -> Path:
    """Fill the filesystem of ``directory`` up to ``leave`` free bytes; the filler file."""
    filler = directory / "filler"
    with filler.open("wb") as f:
        while True:
            st = os.statvfs(directory)
            free = st.f_bavail * st.f_frsize - leave
            if free <= 0:
                break
            try:
                f.write(b"\0" * min(free, 65536))
                f.flush()
            except OSError:
                break
    return filler


def noisy(start: int, count: int) -> list[SessionEvent]:
    """``count`` user messages of 4 KiB of random hex each (zstd cannot shrink them much)."""
    return [
        make_event(
            "user/message",
            start + k,
            3000,
            {
                "content": [{"type": "text", "text": os.urandom(2048).hex()}],
                "source": {"kind": "user"},
            },
            surface_op="append",
        )
        for k in range(count)
    ]


def remount(where: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True)


async def test_a_full_disk_keeps_every_flushed_event_and_a_retry_works(
    small_fs: Path, variant: Any, mk: Any
) -> None:
    root = small_fs / "sessions"
    store = variant.make(root)
    handle = await store.create(mk.header())
    await handle.append(mk.one_turn())
    await handle.flush()
    path = store.log_path(mk.header())
    filler = fill(small_fs)
    big = noisy(6, 60)
    with pytest.raises(SessionStorageError) as info:
        await handle.append(big)
    error = info.value
    assert (error.session_id, error.operation, error.artifact) == ("s-1", "append", str(path))
    assert error.errno == errno.ENOSPC
    async with await variant.make(root).open("s-1", "read") as reader:
        assert [e.seq for e in await reader.read()] == list(range(6))  # flushed events stay
    filler.unlink()
    await handle.append(big)  # the same batch, once space is free
    await handle.flush()
    await handle.close()
    async with await variant.make(root).open("s-1", "read") as reader:
        assert [e.seq for e in await reader.read()] == list(range(66))
    await store.aclose()


async def test_a_full_disk_at_create_leaves_nothing_and_a_retry_works(
    small_fs: Path, variant: Any, mk: Any
) -> None:
    root = small_fs / "sessions"
    root.mkdir()
    filler = fill(small_fs)
    store = variant.make(root)
    handle = await store.create(mk.header())
    with pytest.raises(SessionStorageError) as info:
        await handle.append(mk.one_turn())
    error = info.value
    assert (error.operation, error.errno) == ("create", errno.ENOSPC)
    assert error.artifact == str(store.log_path(mk.header()))
    leftovers = [p.name for p in root.rglob("*") if p.is_file() and p.name != "session.lock"]
    assert leftovers == []  # no temp file, no half log
    filler.unlink()
    await handle.append(mk.one_turn())
    await handle.close()
    async with await variant.make(root).open("s-1", "read") as reader:
        assert len(await reader.read()) == 6
    await store.aclose()


async def test_a_read_only_filesystem_refuses_writes_by_name_and_still_reads(
    small_fs: Path, variant: Any, mk: Any
) -> None:
    root = small_fs / "sessions"
    store = variant.make(root)
    async with await store.create(mk.header()) as handle:
        await handle.append(mk.one_turn())
    await store.aclose()
    path = store.log_path(mk.header())
    remount(small_fs, "ro")
    try:
        store = variant.make(root)
        with pytest.raises(SessionStorageError) as info:
            await store.open("s-1", "write")
        assert (info.value.operation, info.value.errno) == ("open for writing", errno.EROFS)
        assert info.value.artifact == str(path)
        created = await store.create(mk.header("s-2"))
        with pytest.raises(SessionStorageError) as info:
            await created.flush()
        assert (info.value.session_id, info.value.operation) == ("s-2", "create")
        assert info.value.errno == errno.EROFS
        await created.close()
        async with await store.open("s-1", "read") as reader:
            assert len(await reader.read()) == 6
        assert [s.header.id for s in await store.list()] == ["s-1"]
        await store.aclose()
    finally:
        remount(small_fs, "rw")


# -- a log taken away from its writer (§1.9) ---------------------------------------------------


async def _writer(variant: Any, root: Path, mk: Any) -> tuple[Any, Any, Path]:
    store = variant.make(root)
    handle = await store.create(mk.header())
    await handle.append(mk.one_turn())
    await handle.flush()
    return store, handle, store.log_path(mk.header())


async def _expect_lost(handle: Any, path: Path, words: str) -> None:
    with pytest.raises(SessionOwnershipLostError) as info:
        await handle.flush()
    assert info.value.session_id == "s-1"
    assert str(path) in str(info.value)
    assert words in str(info.value)
    with pytest.raises(SessionOwnershipLostError):  # and from then on
        await handle.flush()


async def test_flush_notices_a_log_deleted_under_its_writer(
    root: Path, variant: Any, mk: Any
) -> None:
    store, handle, path = await _writer(variant, root, mk)
    path.unlink()
    await handle.append(mk.one_turn(6, turn=2))
    await _expect_lost(handle, path, "deleted")
    await handle.close()
    await store.aclose()


async def test_flush_notices_a_log_truncated_under_its_writer_and_leaves_no_hole(
    root: Path, variant: Any, mk: Any
) -> None:
    store, handle, path = await _writer(variant, root, mk)
    with path.open("r+b") as f:
        f.truncate(10)
    await handle.append(mk.one_turn(6, turn=2))
    await _expect_lost(handle, path, "truncated")
    data = path.read_bytes()  # the batch went to the true end: no hole of NUL bytes
    if variant.compression == "none":
        assert b"\0" not in data
    else:
        assert data[10:14] == b"\x28\xb5\x2f\xfd"  # the batch's frame right after the cut
    await handle.close()
    await store.aclose()


async def test_flush_notices_a_log_replaced_under_its_writer(
    root: Path, variant: Any, mk: Any, tmp_path: Path
) -> None:
    store, handle, path = await _writer(variant, root, mk)
    other = tmp_path / "other"
    other.write_bytes(path.read_bytes())
    os.replace(other, path)
    await _expect_lost(handle, path, "")
    await handle.close()
    await store.aclose()


async def test_flush_of_an_untouched_log_still_passes(root: Path, variant: Any, mk: Any) -> None:
    store, handle, _path = await _writer(variant, root, mk)
    for turn in range(2, 5):
        await handle.append(mk.one_turn(6 * (turn - 1), turn=turn))
        await handle.flush()
    await handle.close()
    async with await variant.make(root).open("s-1", "read") as reader:
        assert len(await reader.read()) == 24
    await store.aclose()
