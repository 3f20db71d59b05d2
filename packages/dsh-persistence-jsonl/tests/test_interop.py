"""The TypeScript harness's v0 logs (tests/fixtures/upstream-v0) placed under a root."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import zstandard

from dsh_persistence import export_session
from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import decode_header_line, decode_row, encode_event

FIXTURE_DIR = Path(__file__).parent / "fixtures" / "upstream-v0"
FIXTURE_FILES = sorted(p.name for p in FIXTURE_DIR.glob("*.jsonl"))


def _fixture(name: str) -> tuple[bytes, list[bytes]]:
    data = (FIXTURE_DIR / name).read_bytes()
    assert data.endswith(b"\n")
    return data, data.split(b"\n")[:-1]


def _place(store: JsonlPersistence, lines: list[bytes]) -> tuple[Any, Path]:
    header, _cut = decode_header_line(lines[0])
    path = store.log_path(header)
    path.parent.mkdir(parents=True)
    if store.compression == "none":
        path.write_bytes(b"".join(line + b"\n" for line in lines))
    else:
        compressor = zstandard.ZstdCompressor(write_checksum=True)
        body = b"".join(line + b"\n" for line in lines[1:])
        path.write_bytes(
            compressor.compress(lines[0] + b"\n") + (compressor.compress(body) if body else b"")
        )
    return header, path


def _logical(lines: list[bytes]) -> list[bytes]:
    return [encode_event(event) for line in lines[1:] for event in decode_row(line)]


def test_every_fixture_is_here() -> None:
    assert len(FIXTURE_FILES) == 11


@pytest.mark.parametrize("name", FIXTURE_FILES)
async def test_fixture_reads_back_as_its_logical_events(
    root: Path, variant: Any, name: str
) -> None:
    _data, lines = _fixture(name)
    store = variant.make(root)
    header, _path = _place(store, lines)
    async with await store.open(header.id, "read") as reader:
        events = await reader.read()
        assert reader.header == header
    assert [encode_event(e) for e in events] == _logical(lines)
    assert [e.seq for e in events] == list(range(len(events)))
    await store.aclose()


@pytest.mark.parametrize("name", FIXTURE_FILES)
async def test_fixture_lists_with_its_header(root: Path, variant: Any, name: str) -> None:
    _data, lines = _fixture(name)
    store = variant.make(root)
    header, _path = _place(store, lines)
    (snapshot,) = await store.list()
    assert snapshot.header == header
    if store.compression == "none":
        assert snapshot.event_count == len(_logical(lines))
    await store.aclose()


@pytest.mark.parametrize("name", FIXTURE_FILES)
async def test_fixture_exports_as_plain_jsonl(root: Path, variant: Any, name: str) -> None:
    _data, lines = _fixture(name)
    store = variant.make(root)
    header, _path = _place(store, lines)
    out = io.BytesIO()
    count = await export_session(store, header.id, out)
    expected = b"".join(line + b"\n" for line in [lines[0], *_logical(lines)])
    assert out.getvalue() == expected
    assert count == len(_logical(lines))
    await store.aclose()


@pytest.mark.parametrize("name", FIXTURE_FILES)
async def test_fixture_opens_for_write_and_continues(root: Path, variant: Any, name: str) -> None:
    _data, lines = _fixture(name)
    store = variant.make(root)
    header, _path = _place(store, lines)
    async with await store.open(header.id, "write") as writer:
        assert len(await writer.read()) == len(_logical(lines))
    await store.aclose()


@pytest.mark.parametrize("name", FIXTURE_FILES)
async def test_pack_chunks_writes_the_fixture_layout(root: Path, name: str) -> None:
    data, lines = _fixture(name)
    header, cut = decode_header_line(lines[0])
    store = JsonlPersistence(root, pack_chunks=True)
    handle = await store.create(header, inherited_event_count=cut)
    for line in lines[1:]:  # one batch per stored row, as the harness flushed them
        await handle.append(decode_row(line))
    await handle.flush()
    await handle.close()
    assert store.log_path(header).read_bytes() == data
    await store.aclose()
