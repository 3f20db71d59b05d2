"""Bounded reads (issue 24 §1.4): a zstd frame's plaintext and the header line are capped, and
stat/list read the first line in linear time, at most the cap (plus a block) of it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import zstandard

import dsh_persistence_jsonl._store as store_module
from dsh_persistence import SessionPersistenceCorruptionError
from dsh_persistence_jsonl import JsonlPersistence
from dsh_persistence_jsonl._store import MAX_HEADER_LINE
from dsh_persistence_jsonl._zstdframes import MAX_FRAME_BYTES
from dsh_session import encode_event, encode_header_line


def _zstd_log(root: Path, mk: Any, body_frame: bytes) -> tuple[JsonlPersistence, Path, int]:
    """A zstd log: the header frame, one good turn, then ``body_frame``; and where it starts."""
    compress = zstandard.ZstdCompressor(write_checksum=True, write_content_size=True).compress
    head = compress(encode_header_line(mk.header()) + b"\n")
    head += compress(b"".join(encode_event(e) + b"\n" for e in mk.one_turn()))
    store = JsonlPersistence(root, compression="zstd")
    path = store.log_path(mk.header())
    path.parent.mkdir(parents=True)
    path.write_bytes(head + body_frame)
    return store, path, len(head)


def _bomb(size: int, *, declared: bool) -> bytes:
    """A checksummed frame of ``size`` zero bytes (tiny once compressed)."""
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    stream = compressor.compressobj(size=size if declared else -1)
    piece = b"\0" * (1 << 20)
    parts = [stream.compress(piece) for _ in range(size // len(piece))]
    parts.append(stream.flush())
    return b"".join(parts)


async def test_a_small_frame_expanding_to_gigabytes_is_refused_by_the_cap(
    tmp_path: Path, mk: Any
) -> None:
    bomb = _bomb(3 << 30, declared=False)  # the case: ~98 KB expanding to 3 GiB
    assert len(bomb) < 200_000
    store, path, offset = _zstd_log(tmp_path, mk, bomb)
    for access in ("read", "write"):
        with pytest.raises(SessionPersistenceCorruptionError, match="cap") as info:
            await store.open("s-1", access)
        assert info.value.artifact == str(path)
        assert f"zstd frame at byte {offset}" in str(info.value)
        assert f"{MAX_FRAME_BYTES} byte cap" in str(info.value)
    await store.aclose()


async def test_a_frame_declaring_more_than_the_cap_is_refused_from_its_header(
    tmp_path: Path, mk: Any
) -> None:
    bomb = _bomb(MAX_FRAME_BYTES + (1 << 20), declared=True)
    assert zstandard.frame_content_size(bomb) > MAX_FRAME_BYTES
    store, path, offset = _zstd_log(tmp_path, mk, bomb)
    with pytest.raises(SessionPersistenceCorruptionError, match="declares") as info:
        await store.open("s-1", "read")
    assert (info.value.artifact, info.value.line) == (str(path), 1 + 6 + 1)
    assert f"zstd frame at byte {offset}" in str(info.value)
    await store.aclose()


class PreadCount:
    """Counts the bytes ``os.pread`` returns (stat and list read the header with it)."""

    def __init__(self) -> None:
        self.bytes = 0
        self._pread = os.pread

    def __call__(self, fd: int, n: int, offset: int) -> bytes:
        data = self._pread(fd, n, offset)
        self.bytes += len(data)
        return data


@pytest.mark.parametrize("compression", ["none", "zstd"])
async def test_stat_of_a_log_whose_first_line_is_64_mb_is_refused_reading_at_most_the_cap(
    tmp_path: Path, mk: Any, monkeypatch: pytest.MonkeyPatch, compression: str
) -> None:
    first = b'{"type":"session","version":0,"id":"s-1","createdAt":1000,"agentPreset":"'
    first += b"x" * (64 << 20) + b'"}\n'
    store = JsonlPersistence(tmp_path, compression=compression)  # type: ignore[arg-type]
    path = store.log_path(mk.header())
    path.parent.mkdir(parents=True)
    if compression == "zstd":
        first = zstandard.ZstdCompressor(write_checksum=True).compress(first)
    path.write_bytes(first)
    count = PreadCount()
    monkeypatch.setattr(store_module.os, "pread", count)
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        await store.stat("s-1")
    assert (info.value.artifact, info.value.line) == (str(path), 1)
    assert count.bytes <= 2 * MAX_HEADER_LINE + 256 * 1024  # never the 64 MB
    if compression == "none":
        assert f"longer than the {MAX_HEADER_LINE} byte cap" in str(info.value)
        count.bytes = 0
        assert await store.list() == []  # skipped, the others still listed
        assert count.bytes <= 2 * MAX_HEADER_LINE
        with pytest.raises(SessionPersistenceCorruptionError, match="byte cap") as info:
            await store.open("s-1", "read")
        assert info.value.line == 1
    await store.aclose()


async def test_a_header_line_just_under_the_cap_is_read(tmp_path: Path, mk: Any) -> None:
    store = JsonlPersistence(tmp_path)
    async with await store.create(mk.header()) as writer:
        await writer.append(mk.one_turn())
    path = store.log_path(mk.header())
    lines = path.read_bytes().split(b"\n")
    pad = MAX_HEADER_LINE - len(lines[0]) - len(',"agentPreset":""')
    lines[0] = lines[0][:-1] + b',"agentPreset":"' + b"t" * pad + b'"}'
    assert len(lines[0]) == MAX_HEADER_LINE
    path.write_bytes(b"\n".join(lines))
    snapshot = await JsonlPersistence(tmp_path).stat("s-1")
    assert snapshot is not None
    assert snapshot.event_count == 6
    async with await JsonlPersistence(tmp_path).open("s-1", "read") as reader:
        assert len(await reader.read()) == 6
    await store.aclose()
