"""export_session: plain JSONL bytes through a read handle, to a file object or a path."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from dsh_persistence import (
    SessionPersistenceCorruptionError,
    SessionPersistenceNotFoundError,
    export_session,
)
from dsh_persistence.testing import PersistenceFixture
from dsh_session import SessionEvent, decode_event, decode_header_line, encode_event

HEADER = b'{"type":"session","version":0,"id":"exp","createdAt":1000,"cwd":"/w","seedLength":2}'


def _events(count: int) -> list[SessionEvent]:
    return [
        decode_event(
            json.dumps({"type": "step/start", "seq": i, "time": 5, "data": {"turn": 1, "step": i}})
        )
        for i in range(count)
    ]


async def test_export_to_a_path_writes_header_and_events_and_returns_the_count(
    reference_dir_fixture: PersistenceFixture, tmp_path: Path
) -> None:
    persistence = await reference_dir_fixture.instance()
    header, inherited = decode_header_line(HEADER)
    async with await persistence.create(header, inherited_event_count=inherited) as handle:
        await handle.append(_events(5000))
    out = tmp_path / "out.jsonl"
    assert await export_session(persistence, "exp", out) == 5000
    lines = out.read_bytes().split(b"\n")
    assert lines[0] == HEADER
    assert lines[1:-1] == [encode_event(e) for e in _events(5000)]
    assert lines[-1] == b""
    await persistence.aclose()


async def test_export_of_an_empty_session_is_its_header_line(
    reference_dir_fixture: PersistenceFixture,
) -> None:
    persistence = await reference_dir_fixture.instance()
    header, inherited = decode_header_line(HEADER)
    async with await persistence.create(header, inherited_event_count=inherited) as handle:
        await handle.flush()
    out = io.BytesIO()
    assert await export_session(persistence, "exp", out) == 0
    assert out.getvalue() == HEADER + b"\n"
    await persistence.aclose()


async def test_export_of_an_absent_session_raises_not_found(
    reference_dir_fixture: PersistenceFixture,
) -> None:
    persistence = await reference_dir_fixture.instance()
    with pytest.raises(SessionPersistenceNotFoundError):
        await export_session(persistence, "absent", io.BytesIO())
    await persistence.aclose()


async def test_a_failed_export_to_a_path_leaves_the_existing_file_as_it_was(
    reference_dir_fixture: PersistenceFixture, tmp_path: Path
) -> None:
    persistence = await reference_dir_fixture.instance()
    (tmp_path / "exports").mkdir()
    out = tmp_path / "exports" / "kept.jsonl"
    out.write_bytes(b"what was there before\n")
    out.chmod(0o640)
    with pytest.raises(SessionPersistenceNotFoundError):
        await export_session(persistence, "absent", out)
    assert out.read_bytes() == b"what was there before\n"
    assert os.listdir(out.parent) == ["kept.jsonl"]  # no temporary left
    header, inherited = decode_header_line(HEADER)
    async with await persistence.create(header, inherited_event_count=inherited) as handle:
        await handle.append(_events(3))
    assert await export_session(persistence, "exp", out) == 3
    assert out.read_bytes().startswith(HEADER)
    assert out.stat().st_mode & 0o777 == 0o640  # replaced whole, its mode kept
    await persistence.aclose()


class _OffsetBlindHandle:
    """A read handle whose read() ignores its offset (or its length): always the log's start."""

    def __init__(self, events: list[SessionEvent], *, ignore_length: bool = False) -> None:
        self.header, self.inherited_event_count = decode_header_line(HEADER)
        self.id, self.access = "exp", "read"
        self._events, self._ignore_length = events, ignore_length
        self.reads = 0

    async def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        self.reads += 1
        if self.reads > 10:  # the old export looped here for ever
            raise AssertionError("export kept reading")
        return self._events if self._ignore_length else self._events[:length]

    async def __aenter__(self) -> _OffsetBlindHandle:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None


class _OneHandle:
    def __init__(self, handle: _OffsetBlindHandle) -> None:
        self.handle = handle

    async def open(self, session_id: str, access: str) -> _OffsetBlindHandle:
        return self.handle


@pytest.mark.parametrize(
    ("ignore_length", "message"),
    [(False, "returned seq 0 at index 0 where seq 2 belongs"), (True, "more than asked for")],
)
async def test_export_refuses_a_read_that_is_not_the_next_page(
    ignore_length: bool, message: str
) -> None:
    events = _events(5000 if ignore_length else 2)
    handle = _OffsetBlindHandle(events, ignore_length=ignore_length)
    with pytest.raises(SessionPersistenceCorruptionError, match=message) as caught:
        await export_session(_OneHandle(handle), "exp", io.BytesIO())  # type: ignore[arg-type]
    assert caught.value.session_id == "exp"
    assert handle.reads <= 2


class _OneStoredEvent:
    """A read handle over one stored event no append could make (what a foreign log holds)."""

    def __init__(self, line: bytes) -> None:
        self.header, self.inherited_event_count = decode_header_line(
            HEADER.split(b',"seedLength')[0] + b"}"
        )
        self._events = [decode_event(line)]

    async def open(self, session_id: str, access: str) -> _OneStoredEvent:
        return self

    async def __aenter__(self) -> _OneStoredEvent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        return self._events[offset : None if length is None else offset + length]


async def test_a_stored_integer_with_no_exact_double_exports_as_json_parse_reads_it() -> None:
    stored = _OneStoredEvent(
        b'{"type":"x/y","seq":0,"time":1,"data":{"n":11111111111111111111111111}}'
    )
    out = io.BytesIO()
    assert await export_session(stored, "exp", out) == 1  # type: ignore[arg-type]
    # node: JSON.stringify(JSON.parse(line)) writes the double 1.111111111111111e+25
    assert out.getvalue().split(b"\n")[1] == (
        b'{"type":"x/y","seq":0,"time":1,"data":{"n":1.111111111111111e+25}}'
    )
