"""export_session: plain JSONL bytes through a read handle, to a file object or a path."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dsh_persistence import SessionPersistenceNotFoundError, export_session
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
