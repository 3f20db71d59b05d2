"""``list()``'s quick path (issue 12): a plain log of at most ``WHOLE_READ`` bytes is listed from
one ``open``/``fstat``/``pread``/``close``; anything else falls back to the full path. The quick
path must only ever give what the full path gives: each case here is listed twice, once as
shipped and once with the quick path switched off, and the snapshots (and the skip warnings)
must be the same."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import dsh_persistence_jsonl._listing as listing_module
from dsh_persistence import SessionSnapshot
from dsh_persistence_jsonl import JsonlPersistence
from dsh_persistence_jsonl._store import WHOLE_READ
from dsh_session import SessionHeader, encode_event, encode_header_line


def _write(root: Path, header: SessionHeader, body: bytes, *, line1: bytes | None = None) -> Path:
    path = JsonlPersistence(root).log_path(header)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((encode_header_line(header) if line1 is None else line1) + b"\n" + body)
    return path


def _rows(mk: Any, start: int = 0) -> bytes:
    return b"".join(encode_event(e) + b"\n" for e in mk.one_turn(start))


def _key(snapshot: SessionSnapshot) -> tuple[Any, ...]:
    return (
        snapshot.header,
        snapshot.revision,
        snapshot.event_count,
        snapshot.size_bytes,
        snapshot.updated_at,
        snapshot.plain_path,
    )


async def _both(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """The listing as shipped and with the quick path off; they must agree (warnings too)."""
    quick_calls: list[str] = []
    original = listing_module.RootCatalog._quick_snapshot

    def counted(self: Any, project: str, session: os.DirEntry[str], fd: int) -> Any:
        quick_calls.append(session.name)
        return original(self, project, session, fd)

    monkeypatch.setattr(listing_module.RootCatalog, "_quick_snapshot", counted)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dsh_persistence_jsonl"):
        quick = sorted(map(_key, await JsonlPersistence(root).list()), key=repr)
        quick_warnings = sorted(r.getMessage() for r in caplog.records)
    assert quick_calls, "the quick path was not tried"
    monkeypatch.setattr(listing_module.RootCatalog, "_quick_snapshot", lambda *_: None)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dsh_persistence_jsonl"):
        full = sorted(map(_key, await JsonlPersistence(root).list()), key=repr)
        full_warnings = sorted(r.getMessage() for r in caplog.records)
    assert quick == full
    assert quick_warnings == full_warnings
    return quick, quick_warnings


async def test_common_logs_are_listed_as_the_full_path_lists_them(
    tmp_path: Path, mk: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _write(tmp_path, mk.header("plain"), _rows(mk))
    _write(tmp_path, mk.header("header-only"), b"")
    _write(tmp_path, mk.header("torn"), _rows(mk) + b'{"type":"turn/sta')
    _write(tmp_path, mk.header("garbage-last"), _rows(mk) + b"not json\n")
    _write(tmp_path, mk.header("no-cwd", cwd=None), _rows(mk))
    _write(tmp_path, mk.header("w", cwd="C:\\work"), _rows(mk))  # not the common header
    seeded = SessionHeader(id="seeded", created_at=1, cwd="/home/u/project", is_seeded=True)
    path = JsonlPersistence(tmp_path).log_path(seeded)
    path.parent.mkdir(parents=True)
    path.write_bytes(encode_header_line(seeded, 6) + b"\n" + _rows(mk))
    packed = JsonlPersistence(tmp_path, pack_chunks=True)
    async with await packed.create(mk.header("packed")) as writer:
        await writer.append(mk.text_chunks(0, 5))
    await packed.aclose()
    listed, warnings = await _both(tmp_path, monkeypatch, caplog)
    counts = {key[0].id: key[2] for key in listed}
    assert counts == {
        "plain": 6,
        "header-only": 0,
        "torn": 6,
        "garbage-last": None,
        "no-cwd": 6,
        "w": 6,
        "seeded": 6,
        "packed": 5,
    }
    assert warnings == []


async def test_a_header_line_past_the_first_block_and_a_log_past_the_whole_read(
    tmp_path: Path, mk: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    long_header = mk.header("long-header").model_copy(update={"agent_preset": "p" * 20_000})
    _write(tmp_path, long_header, _rows(mk))  # line 1 longer than the 8 KiB first block
    big = b"".join(_rows(mk, start) for start in range(0, 6 * 200, 6))
    assert len(big) > WHOLE_READ
    _write(tmp_path, mk.header("big"), big)  # the full path: head and tail reads
    huge_header = mk.header("huge-header").model_copy(update={"agent_preset": "h" * WHOLE_READ})
    _write(tmp_path, huge_header, _rows(mk))  # line 1 alone longer than the quick read
    listed, _ = await _both(tmp_path, monkeypatch, caplog)
    assert {key[0].id: key[2] for key in listed} == {
        "long-header": 6,
        "big": 1200,
        "huge-header": 6,
    }
    store = JsonlPersistence(tmp_path)
    for key in listed:
        assert _key(await store.stat(key[0].id)) == key  # type: ignore[arg-type]


async def test_bad_entries_are_skipped_and_named_as_the_full_path_does(
    tmp_path: Path, mk: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _write(tmp_path, mk.header("good"), _rows(mk))
    _write(tmp_path, mk.header("bad-json"), _rows(mk), line1=b"{not json")
    _write(tmp_path, mk.header("empty"), b"").write_bytes(b"")
    _write(tmp_path, mk.header("no-newline"), b"").write_bytes(
        encode_header_line(mk.header("no-newline"))
    )
    _write(tmp_path, mk.header("elsewhere"), _rows(mk), line1=encode_header_line(mk.header("x")))
    outside = tmp_path.parent / f"{tmp_path.name}-outside.jsonl"
    outside.write_bytes(encode_header_line(mk.header("linked")) + b"\n" + _rows(mk))
    linked = JsonlPersistence(tmp_path).log_path(mk.header("linked"))
    linked.parent.mkdir(parents=True)
    linked.symlink_to(outside)
    directory = JsonlPersistence(tmp_path).log_path(mk.header("dir"))
    directory.mkdir(parents=True)
    real = tmp_path.parent / f"{tmp_path.name}-real"
    _write(real, mk.header("via-link"), _rows(mk))
    project = JsonlPersistence(tmp_path).log_path(mk.header("good")).parent.parent
    (project / "via-link").symlink_to(JsonlPersistence(real).log_path(mk.header("via-link")).parent)
    listed, warnings = await _both(tmp_path, monkeypatch, caplog)
    assert [key[0].id for key in listed] == ["good"]
    named = " ".join(warnings)
    for name in ("bad-json", "empty", "no-newline", "linked", "dir", "via-link"):
        assert f"{os.sep}{name}" in named, name


def test_a_fifo_at_the_log_path_is_skipped_without_waiting(tmp_path: Path, mk: Any) -> None:
    _write(tmp_path, mk.header("good"), _rows(mk))
    fifo = JsonlPersistence(tmp_path).log_path(mk.header("fifo"))
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    script = (
        "import asyncio, sys\n"
        "from dsh_persistence_jsonl import JsonlPersistence\n"
        "print(sorted(s.header.id for s in asyncio.run(JsonlPersistence(sys.argv[1]).list())))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['good']"
    assert f"list() skipped {fifo}: " in done.stderr
    assert "is a FIFO" in done.stderr


async def test_an_entry_vanishing_mid_scan_is_left_out(
    tmp_path: Path, mk: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("a", "b", "c"):
        _write(tmp_path, mk.header(name), _rows(mk))
    gone = JsonlPersistence(tmp_path).log_path(mk.header("b"))
    original = listing_module.read_small_regular

    def vanishing(path: str, limit: int, *, dir_fd: int) -> Any:
        if path.startswith(f"b{os.sep}") and gone.exists():
            gone.unlink()  # removed between the directory entry and the open
        return original(path, limit, dir_fd=dir_fd)

    monkeypatch.setattr(listing_module, "read_small_regular", vanishing)
    with caplog.at_level(logging.WARNING, logger="dsh_persistence_jsonl"):
        listed = await JsonlPersistence(tmp_path).list()
    assert sorted(s.header.id for s in listed) == ["a", "c"]
    assert caplog.records == []


async def test_a_log_growing_between_fstat_and_read_is_listed_as_of_the_fstat(
    tmp_path: Path, mk: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, mk.header("s-1"), _rows(mk))
    real_fstat = os.fstat
    grown: list[int] = []

    def fstat_then_append(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        if not grown and st.st_size == path.stat().st_size and path.exists():
            grown.append(st.st_size)
            with open(path, "ab") as f:
                f.write(_rows(mk, 6))
        return st

    monkeypatch.setattr(os, "fstat", fstat_then_append)
    [snapshot] = await JsonlPersistence(tmp_path).list()
    monkeypatch.undo()
    assert grown
    assert (snapshot.size_bytes, snapshot.event_count) == (grown[0], 6)
