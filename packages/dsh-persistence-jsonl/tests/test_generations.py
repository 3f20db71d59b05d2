"""Issue 35 §3: a session directory holds generation-addressed logs (``session.jsonl`` = v0,
``session.vN.jsonl[.zstd]`` = vN, the TypeScript harness's upgrades kept beside the older file).
The backend lists, stats and opens the highest generation, never the stale lower one beside it;
a write open of a generation it does not write is refused naming both files; real upstream v2,
v3 and v4 logs (``fixtures/upstream-generations``) read, export and verify."""

from __future__ import annotations

import io
import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

import pytest

from dsh_persistence import (
    SessionAlreadyExistsError,
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
    export_session,
)
from dsh_persistence_jsonl import JsonlPersistence
from dsh_persistence_jsonl._zstdframes import compress_frame
from dsh_session import Session, SessionHeader, decode_header_line, make_event

CORPUS = Path(__file__).parent / "fixtures" / "upstream-generations"
LOGS = sorted(CORPUS.glob("*.jsonl"))
OLD = 1_700_000_000_000_000_000  # ns: the stale v0 file's mtime, before the upgrade
NEW = 1_800_000_000_000_000_000  # ns: the directory's mtime, when the upgrade was published


def _generation(path: Path) -> int:
    return int(path.name.rsplit(".v", 1)[1].split(".")[0])


def _place(
    root: Path,
    source: Path,
    *,
    compression: Literal["none", "zstd"] = "none",
    data: bytes | None = None,
) -> Path:
    """Store a corpus log where the harness keeps it: ``<project>/<id>/session.vN.jsonl``."""
    content = source.read_bytes() if data is None else data
    header, _ = decode_header_line(content.split(b"\n", 1)[0])
    directory = JsonlPersistence(root).log_path(header).parent
    directory.mkdir(parents=True, exist_ok=True)
    name = f"session.v{header.version}.jsonl"
    if compression == "zstd":
        head, body = content.split(b"\n", 1)
        content = compress_frame(head + b"\n") + compress_frame(body)
        name += ".zstd"
    path = directory / name
    path.write_bytes(content)
    return path


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes()[:-1].split(b"\n")


def _id(path: Path) -> str:
    header, _ = decode_header_line(path.read_bytes().split(b"\n", 1)[0])
    return header.id


@pytest.mark.parametrize("source", LOGS, ids=[p.stem for p in LOGS])
@pytest.mark.parametrize("compression", ["none", "zstd"])
async def test_a_later_generation_lists_stats_reads_and_exports(
    root: Path, source: Path, compression: Literal["none", "zstd"]
) -> None:
    path = _place(root, source, compression=compression)
    session_id = _id(source)
    store = JsonlPersistence(root, compression=compression)
    (listed,) = await store.list()
    snapshot = await store.stat(session_id)
    assert snapshot is not None
    assert listed.header == snapshot.header
    assert snapshot.header.version == _generation(source)
    lines = _lines(source)
    if compression == "none":
        assert snapshot.plain_path == str(path)
        assert snapshot.event_count == len(lines) - 1
    async with await store.open(session_id, "read") as handle:
        events = await handle.read()
        assert len(events) == len(lines) - 1
        session = Session(handle.header, events, inherited_event_count=handle.inherited_event_count)
        assert session.derive_messages()
    out = io.BytesIO()
    assert await export_session(store, session_id, out) == len(lines) - 1
    assert out.getvalue() == b"".join(line + b"\n" for line in lines)  # byte for byte
    await store.aclose()


async def test_a_seeded_v2_child_opens_with_its_inherited_cut(root: Path) -> None:
    source = CORPUS / "sdk--subagent-fork-in-process--session.1.v2.jsonl"
    _place(root, source)
    store = JsonlPersistence(root)
    async with await store.open(_id(source), "read") as handle:
        assert handle.header.is_seeded
        assert handle.inherited_event_count == 15


async def test_beside_a_higher_generation_the_lower_is_never_read(root: Path) -> None:
    """A v0 session the harness upgraded: its ``session.jsonl`` (one stale event) and the
    ``session.v4.jsonl`` published beside it later (the directory changed after the v0 file;
    the mtimes are set, not waited for)."""
    source = CORPUS / "sdk--dynamic-tool-updates--session.v4.jsonl"
    session_id = _id(source)
    store = JsonlPersistence(root)
    header = SessionHeader(
        id=session_id, created_at=0, cwd="/home/user/project", delegation_depth=0
    )
    async with await store.create(header) as handle:
        await handle.append([make_event("permission/preset", 0, 1, {"preset": "ask"})])
    v0 = store.log_path(header)
    before = v0.read_bytes()
    newer = _place(root, source)
    os.utime(v0, ns=(OLD, OLD))
    os.utime(newer.parent, ns=(NEW, NEW))

    fresh = JsonlPersistence(root)
    (listed,) = await fresh.list()
    assert listed.header.version == 4
    assert listed.plain_path == str(newer)
    snapshot = await fresh.stat(session_id)
    assert snapshot is not None
    assert snapshot.plain_path == str(newer)
    async with await fresh.open(session_id, "read") as handle:
        assert len(await handle.read()) == 30  # the v4 history, not the v0 file's one event

    with pytest.raises(SessionFormatUnsupportedError) as raised:
        await fresh.open(session_id, "write")
    message = str(raised.value)
    assert "session.v4.jsonl" in message
    assert str(v0) in message
    assert "split the session" in message
    assert raised.value.artifact == str(newer)
    assert v0.read_bytes() == before  # the lower file is untouched
    with pytest.raises(SessionAlreadyExistsError):
        await fresh.create(header)
    await fresh.aclose()
    await store.aclose()


async def test_a_write_open_of_a_later_generation_alone_is_refused(root: Path) -> None:
    source = CORPUS / "sdk--text-turn--session.v2.jsonl"
    path = _place(root, source)
    before = path.read_bytes()
    with pytest.raises(SessionFormatUnsupportedError, match=r"session\.v2\.jsonl") as raised:
        await JsonlPersistence(root).open(_id(source), "write")
    assert "writes only session.jsonl" in str(raised.value)
    assert path.read_bytes() == before
    assert not (path.parent / "session.jsonl").exists()


async def test_a_generation_above_four_is_refused_as_newer(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = CORPUS / "sdk--text-turn--session.v2.jsonl"
    path = _place(root, source)
    (path.parent / "session.v5.jsonl").write_bytes(
        path.read_bytes().replace(b'"version":2', b'"version":5')
    )
    store = JsonlPersistence(root)
    for access in ("read", "write"):
        with pytest.raises(SessionFormatUnsupportedError, match="newer harness") as raised:
            await store.open(_id(source), access)  # type: ignore[arg-type]
        assert raised.value.version == 5
    with caplog.at_level(logging.WARNING):
        assert await store.list() == []
    assert any("session.v5.jsonl" in r.getMessage() for r in caplog.records)


async def test_a_header_that_disagrees_with_its_file_name_is_corruption(root: Path) -> None:
    source = CORPUS / "sdk--ptc-turn--session.v3.jsonl"
    path = _place(root, source)
    path.rename(path.parent / "session.v4.jsonl")
    with pytest.raises(SessionPersistenceCorruptionError, match="generation 4") as raised:
        await JsonlPersistence(root).open(_id(source), "read")
    assert raised.value.line == 1


def _edited(source: Path, line: int, edit: Any) -> bytes:
    lines = source.read_bytes()[:-1].split(b"\n")
    row = json.loads(lines[line - 1])
    edit(row)
    lines[line - 1] = json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode()
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize(
    ("source", "line", "edit", "words"),
    [
        (
            "sdk--dynamic-tool-updates--session.v4.jsonl",
            17,
            lambda row: row["data"]["message"].update(role="user"),
            "role 'tool'",
        ),
        (
            "session--compaction-output-reserve--session.v4.jsonl",
            21,
            lambda row: row.update(surfaceOp={"op": "replace", "start": 8, "end": 9}),
            "startSeq, endSeq",
        ),
        (
            "sdk--text-turn--session.v2.jsonl",
            5,
            lambda row: row.update(type="vendor/note", ignorable=True),
            "v2 inventory",
        ),
    ],
)
async def test_a_bad_row_is_corruption_naming_file_and_line(
    root: Path, source: str, line: int, edit: Any, words: str
) -> None:
    data = _edited(CORPUS / source, line, edit)
    path = _place(root, CORPUS / source, data=data)
    store = JsonlPersistence(root)
    with pytest.raises(SessionPersistenceCorruptionError, match=words) as raised:
        await store.open(_id(CORPUS / source), "read")
    assert raised.value.artifact == str(path)
    assert raised.value.line == line


async def test_a_seeded_log_without_its_marker_is_corruption(root: Path) -> None:
    source = CORPUS / "sdk--subagent-fork-in-process--session.1.v2.jsonl"
    data = _edited(source, 17, lambda row: row.update(data={}))  # seq 15, the marker
    path = _place(root, source, data=data)
    with pytest.raises(SessionPersistenceCorruptionError, match="inherited-cut marker") as raised:
        await JsonlPersistence(root).open(_id(source), "read")
    assert raised.value.artifact == str(path)


async def test_files_that_only_look_like_generations_change_nothing(root: Path) -> None:
    store = JsonlPersistence(root)
    header = SessionHeader(id="s-odd-names", created_at=1, cwd=str(root))
    async with await store.create(header) as handle:
        await handle.append([make_event("turn/start", 0, 1, {"turn": 1})])
    log = store.log_path(header)
    for name in ("session.v0.jsonl", "session.vx.jsonl", "session.v4.json", "notes.v4.jsonl"):
        (log.parent / name).write_bytes(b"{}\n")
    async with await store.open("s-odd-names", "write") as handle:
        assert len(await handle.read()) == 1


async def test_a_read_handle_checks_rows_the_harness_appends_later(root: Path) -> None:
    source = CORPUS / "sdk--text-turn--session.v2.jsonl"
    path = _place(root, source)
    store = JsonlPersistence(root)
    async with await store.open(_id(source), "read") as handle:
        count = len(await handle.read())
        bad = {"type": "vendor/note", "seq": count, "time": 1, "data": {}, "ignorable": True}
        with path.open("ab") as f:
            f.write(json.dumps(bad, separators=(",", ":")).encode() + b"\n")
        with pytest.raises(SessionPersistenceCorruptionError, match="v2 inventory") as raised:
            await handle.read(count)
        assert raised.value.line == count + 2
