"""Backend behaviour of reference §3 and §5.3 (JSONL list), over every selected variant."""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard

from dsh_persistence import (
    SessionAlreadyOwnedError,
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
    SessionPersistenceNotFoundError,
    SessionStorageError,
)
from dsh_persistence_jsonl import JsonlPersistence, RootEncodingError
from dsh_session import encode_event, encode_header_line, make_event

Factory = Callable[[], JsonlPersistence]


def frame(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


def store_bytes(store: JsonlPersistence, lines: list[bytes]) -> bytes:
    """The physical bytes of a log whose plaintext lines are ``lines`` (header first); zstd
    gets one frame per line, as if each record had been its own batch."""
    if store.compression == "none":
        return b"".join(line + b"\n" for line in lines)
    return b"".join(frame(line + b"\n") for line in lines)


def torn_bytes(store: JsonlPersistence, lines: list[bytes]) -> bytes:
    """A tail a crash could leave: complete garbage lines (plain), or a frame of ``lines`` cut
    in half (zstd: a checksummed frame is never torn)."""
    if store.compression == "none":
        return b"".join(line + b"\n" for line in lines)
    whole = frame(b"".join(line + b"\n" for line in lines))
    return whole[: len(whole) // 2]


def put(store: JsonlPersistence, header: Any, data: bytes) -> Path:
    path = store.log_path(header)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def log_lines(mk: Any, session_id: str, events: list[Any]) -> list[bytes]:
    return [encode_header_line(mk.header(session_id)), *(encode_event(e) for e in events)]


async def test_create_touches_no_file_until_the_first_append(make_store: Factory, mk: Any) -> None:
    store = make_store()
    handle = await store.create(mk.header())
    path = store.log_path(mk.header())
    assert not path.exists()
    await handle.append(mk.one_turn())
    assert path.exists()
    await handle.close()
    await store.aclose()


async def test_a_created_session_closed_unwritten_leaves_no_file(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    await (await store.create(mk.header())).close()
    assert not store.log_path(mk.header()).exists()
    assert await store.stat("s-1") is None
    await store.aclose()


async def test_flush_of_an_empty_session_publishes_the_header_alone(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    async with await store.create(mk.header()) as handle:
        await handle.flush()
    data = store.log_path(mk.header()).read_bytes()
    line = encode_header_line(mk.header())
    if store.compression == "none":
        assert data == line + b"\n"
    else:
        assert zstandard.ZstdDecompressor().decompressobj().decompress(data) == line + b"\n"
    await store.aclose()


async def test_plain_log_is_the_canonical_lines_byte_for_byte(root: Path, mk: Any) -> None:
    store = JsonlPersistence(root)
    events = [*mk.one_turn(), *mk.text_chunks(6, 4)]
    async with await store.create(mk.header()) as handle:
        await handle.append(events)
    expected = b"".join(line + b"\n" for line in log_lines(mk, "s-1", events))
    assert store.log_path(mk.header()).read_bytes() == expected
    await store.aclose()


async def test_packed_plain_log_reads_back_the_logical_events(root: Path, mk: Any) -> None:
    store = JsonlPersistence(root, pack_chunks=True)
    events = [*mk.text_chunks(0, 5)]
    async with await store.create(mk.header()) as handle:
        await handle.append(events)
    lines = mk.lines_of(store.log_path(mk.header()))
    assert len(lines) == 2
    assert lines[1].startswith(b'{"type":"text-chunks","seq0":0')
    async with await JsonlPersistence(root).open("s-1", "read") as reader:
        assert [encode_event(e) for e in await reader.read()] == [encode_event(e) for e in events]
    await store.aclose()


async def test_packed_unpacked_and_mixed_layouts_read_the_same(root: Path, mk: Any) -> None:
    events = mk.text_chunks(0, 8)
    reads = []
    for pack_first, pack_second in ((False, False), (True, True), (True, False)):
        store = JsonlPersistence(root / f"{pack_first}{pack_second}", pack_chunks=pack_first)
        async with await store.create(mk.header()) as handle:
            await handle.append(events[:4])
        await store.aclose()
        store = JsonlPersistence(root / f"{pack_first}{pack_second}", pack_chunks=pack_second)
        async with await store.open("s-1", "write") as handle:
            await handle.append(events[4:])
        async with await store.open("s-1", "read") as reader:
            reads.append([encode_event(e) for e in await reader.read()])
        await store.aclose()
    assert reads[0] == reads[1] == reads[2] == [encode_event(e) for e in events]


async def test_a_future_format_version_is_unsupported_and_says_upgrade(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    line = b'{"type":"session","version":7,"id":"s-1","createdAt":1000,"cwd":"/home/u/project"}'
    path = put(store, mk.header(), store_bytes(store, [line, b"not even json"]))
    for access in ("read", "write"):
        with pytest.raises(SessionFormatUnsupportedError, match="upgrade") as info:
            await store.open("s-1", access)
        assert str(path) in str(info.value)
    await store.aclose()


async def test_a_non_object_header_line_is_corruption_on_line_1(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    path = put(store, mk.header(), store_bytes(store, [b"[1,2]"]))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        await store.open("s-1", "read")
    assert info.value.line == 1
    assert info.value.artifact == str(path)
    await store.aclose()


async def test_a_header_naming_another_session_is_refused(make_store: Factory, mk: Any) -> None:
    store = make_store()
    put(store, mk.header("s-1"), store_bytes(store, log_lines(mk, "s-2", [])))
    with pytest.raises(SessionPersistenceCorruptionError, match="s-2"):
        await store.open("s-1", "write")
    await store.aclose()


async def test_a_log_under_the_wrong_project_directory_is_refused(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    put(store, mk.header("s-1", cwd="/elsewhere"), store_bytes(store, log_lines(mk, "s-1", [])))
    with pytest.raises(SessionPersistenceCorruptionError, match="project directory"):
        await store.open("s-1", "read")
    assert await store.list() == []
    await store.aclose()


async def test_garbage_after_the_last_turn_end_is_a_discarded_tail(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    events = mk.one_turn()
    tail = torn_bytes(store, [b'{"type":"turn/start","seq":6', b"garbage"])
    put(store, mk.header(), store_bytes(store, log_lines(mk, "s-1", events)) + tail)
    async with await store.open("s-1", "read") as reader:
        assert len(await reader.read()) == 6
    async with await store.open("s-1", "write") as writer:
        await writer.append(mk.one_turn(6, turn=2))
    async with await make_store().open("s-1", "read") as reader:
        assert [e.seq for e in await reader.read()] == list(range(12))
    await store.aclose()


async def test_garbage_before_a_committed_turn_end_is_corruption_naming_the_line(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    events = mk.one_turn()
    lines = log_lines(mk, "s-1", events)
    lines[3] = b"{broken"
    path = put(store, mk.header(), store_bytes(store, lines))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        await store.open("s-1", "read")
    assert info.value.line == 4
    assert info.value.artifact == str(path)
    await store.aclose()


async def test_a_seq_gap_before_a_committed_turn_end_is_corruption(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    events = mk.one_turn()
    lines = log_lines(mk, "s-1", events[:2] + events[3:])
    put(store, mk.header(), store_bytes(store, lines))
    with pytest.raises(SessionPersistenceCorruptionError, match="expected seq 2") as info:
        await store.open("s-1", "read")
    assert info.value.line == 4
    await store.aclose()


async def test_a_seq_gap_after_the_last_turn_end_is_a_discarded_tail(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    second = mk.one_turn(6, turn=2)
    tail = torn_bytes(store, [encode_event(second[1])])
    put(store, mk.header(), store_bytes(store, log_lines(mk, "s-1", mk.one_turn())) + tail)
    async with await store.open("s-1", "read") as reader:
        assert len(await reader.read()) == 6
    await store.aclose()


async def test_a_header_only_log_has_no_events(make_store: Factory, mk: Any) -> None:
    store = make_store()
    put(store, mk.header(), store_bytes(store, log_lines(mk, "s-1", [])))
    async with await store.open("s-1", "read") as reader:
        assert list(await reader.read()) == []
    await store.aclose()


async def test_a_read_handle_never_repairs_a_torn_tail(root: Path, mk: Any) -> None:
    store = JsonlPersistence(root)
    lines = log_lines(mk, "s-1", mk.one_turn())
    data = store_bytes(store, lines) + b'{"type":"tu'
    path = put(store, mk.header(), data)
    async with await store.open("s-1", "read") as reader:
        assert len(await reader.read()) == 6
    assert path.read_bytes() == data
    async with await store.open("s-1", "write"):
        pass
    assert path.read_bytes() == data  # truncation waits for the first append
    await store.aclose()


async def test_the_lock_file_stays_after_close(make_store: Factory, mk: Any) -> None:
    store = make_store()
    async with await store.create(mk.header()) as handle:
        await handle.append(mk.one_turn())
    lock = store.log_path(mk.header()).parent / "session.lock"
    assert lock.exists()
    async with await store.open("s-1", "write"):
        assert lock.exists()
    await store.aclose()


async def test_a_second_instance_cannot_write_while_the_first_owns(
    make_store: Factory, mk: Any
) -> None:
    first, second = make_store(), make_store()
    async with await first.create(mk.header()) as handle:
        await handle.append(mk.one_turn())
        with pytest.raises(SessionAlreadyOwnedError):
            await second.open("s-1", "write")
        async with await second.open("s-1", "read") as reader:
            assert len(await reader.read()) == 6
    async with await second.open("s-1", "write"):
        pass
    await first.aclose()
    await second.aclose()


async def test_stat_reports_size_revision_and_plain_path(make_store: Factory, mk: Any) -> None:
    store = make_store()
    async with await store.create(mk.header()) as handle:
        await handle.append(mk.one_turn())
    snap = await store.stat("s-1")
    assert snap is not None
    path = store.log_path(mk.header())
    st = path.stat()
    assert snap.size_bytes == st.st_size
    assert (
        snap.revision == f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    )
    if store.compression == "none":
        assert snap.plain_path == str(path)
        assert snap.event_count == 6
    else:
        assert snap.plain_path is None
        assert snap.event_count is None
    await store.aclose()


async def test_event_count_comes_from_the_last_packed_row(root: Path, mk: Any) -> None:
    store = JsonlPersistence(root, pack_chunks=True)
    async with await store.create(mk.header()) as handle:
        await handle.append(mk.text_chunks(0, 7))
    snap = await store.stat("s-1")
    assert snap is not None
    assert snap.event_count == 7
    await store.aclose()


async def test_the_revision_is_the_same_from_a_fresh_instance(make_store: Factory, mk: Any) -> None:
    store = make_store()
    async with await store.create(mk.header()) as handle:
        await handle.append(mk.one_turn())
    a, b = await store.stat("s-1"), await make_store().stat("s-1")
    assert a is not None
    assert b is not None
    assert a.revision == b.revision
    await store.aclose()


async def test_list_spans_projects_and_reads_a_long_header(make_store: Factory, mk: Any) -> None:
    store = make_store()
    for sid, cwd in (("a", "/p/one"), ("b", "/p/two"), ("c", None), ("d", "/" + "x" * 9000)):
        async with await store.create(mk.header(sid, cwd=cwd)) as handle:
            await handle.flush()
    listed = {s.header.id: s.header.cwd for s in await make_store().list()}
    assert listed == {"a": "/p/one", "b": "/p/two", "c": None, "d": "/" + "x" * 9000}
    await store.aclose()


async def test_list_of_a_missing_root_is_empty(tmp_path: Path, variant: Any) -> None:
    assert await variant.make(tmp_path / "absent").list() == []


async def test_list_skips_an_unreadable_artifact(make_store: Factory, mk: Any) -> None:
    store = make_store()
    put(store, mk.header("bad"), b"")
    async with await store.create(mk.header("good")) as handle:
        await handle.flush()
    assert [s.header.id for s in await store.list()] == ["good"]
    await store.aclose()


async def test_open_of_an_absent_id_is_not_found(make_store: Factory) -> None:
    store = make_store()
    for access in ("read", "write"):
        with pytest.raises(SessionPersistenceNotFoundError):
            await store.open("nope", access)  # type: ignore[arg-type]
    await store.aclose()


async def test_a_read_handle_raises_when_the_log_shrinks(make_store: Factory, mk: Any) -> None:
    store = make_store()
    async with await store.create(mk.header()) as handle:
        await handle.append(mk.one_turn())
    path = store.log_path(mk.header())
    async with await store.open("s-1", "read") as reader:
        await reader.read()
        with path.open("r+b") as f:
            f.truncate(10)
        with pytest.raises(SessionPersistenceCorruptionError, match="shrank"):
            await reader.read()
    await store.aclose()


async def test_ids_that_are_not_paths_round_trip(make_store: Factory, mk: Any) -> None:
    store = make_store()
    for sid in ("..", "a/b", "a\x01b", "😀", "é" * 300):
        async with await store.create(mk.header(sid)) as handle:
            await handle.append(mk.one_turn())
        async with await make_store().open(sid, "read") as reader:
            assert reader.header.id == sid
            assert len(await reader.read()) == 6
    assert len(await make_store().list()) == 5
    await store.aclose()


async def test_a_failed_append_truncates_its_partial_bytes(make_store: Factory, mk: Any) -> None:
    import resource
    import signal

    store = make_store()
    handle = await store.create(mk.header())
    await handle.append(mk.one_turn())
    path = store.log_path(mk.header())
    before = path.read_bytes()
    big = [*mk.text_chunks(6, 50), *mk.one_turn(56, turn=2)]
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 40, hard))
    try:
        with pytest.raises(SessionStorageError, match="File too large") as info:
            await handle.append(big)
        assert (info.value.operation, info.value.artifact) == ("append", str(path))
        assert info.value.errno == errno.EFBIG
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert path.read_bytes() == before
    await handle.append(big)  # the retry stores the batch once, at the right seqs
    await handle.close()
    async with await make_store().open("s-1", "read") as reader:
        assert [e.seq for e in await reader.read()] == list(range(62))
    await store.aclose()


async def test_concurrent_sessions_do_not_cross(make_store: Factory, mk: Any) -> None:
    store = make_store()
    a = await store.create(mk.header("a"))
    b = await store.create(mk.header("b", cwd="/other"))
    for turn in range(3):
        await a.append(mk.one_turn(6 * turn, turn=turn + 1))
        await b.append(mk.text_chunks(4 * turn, 4))
    await a.close()
    await b.close()
    fresh = make_store()
    async with await fresh.open("a", "read") as ra, await fresh.open("b", "read") as rb:
        assert {e.type for e in await rb.read()} == {"assistant/chunk"}
        assert len(await ra.read()) == 18
        assert len(await rb.read()) == 12
    await store.aclose()


async def test_the_same_id_in_two_project_directories_is_refused(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    for cwd in ("/p/one", "/p/two"):
        put(store, mk.header("twin", cwd=cwd), store_bytes(store, log_lines(mk, "twin", [])))
    with pytest.raises(SessionPersistenceCorruptionError, match="multiple project directories"):
        await store.open("twin", "read")
    await store.aclose()


def test_a_plain_root_refuses_a_zstd_instance(tmp_path: Path) -> None:
    (tmp_path / "--p--" / "s").mkdir(parents=True)
    (tmp_path / "--p--" / "s" / "session.jsonl").write_bytes(b"")
    with pytest.raises(RootEncodingError, match="compression='none'"):
        JsonlPersistence(tmp_path, compression="zstd")


def test_a_zstd_root_refuses_a_plain_instance(tmp_path: Path) -> None:
    (tmp_path / "--p--" / "s").mkdir(parents=True)
    (tmp_path / "--p--" / "s" / "session.jsonl.zstd").write_bytes(b"")
    with pytest.raises(RootEncodingError, match="separate root"):
        JsonlPersistence(tmp_path)


async def test_an_opposite_artifact_found_later_is_refused_at_lookup(
    tmp_path: Path, mk: Any
) -> None:
    store = JsonlPersistence(tmp_path)
    other = JsonlPersistence(tmp_path, compression="zstd")
    async with await other.create(mk.header("z")) as handle:
        await handle.flush()
    with pytest.raises(RootEncodingError):
        await store.open("z", "read")
    with pytest.raises(RootEncodingError):
        await store.list()
    await store.aclose()
    await other.aclose()


async def test_a_bad_line_in_an_open_turn_followed_by_intact_lines_is_corruption(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    events = mk.one_turn()[:5]  # a turn still running: no turn/end anywhere
    lines = log_lines(mk, "s-1", events)
    lines[2] = b"{broken"
    path = put(store, mk.header(), store_bytes(store, lines))
    before = path.read_bytes()
    for access in ("read", "write", "write"):
        with pytest.raises(SessionPersistenceCorruptionError) as info:
            await make_store().open("s-1", access)
        assert (info.value.line, info.value.artifact) == (3, str(path))
    assert path.read_bytes() == before  # never truncated: the later flushed events stay
    await store.aclose()


@pytest.mark.parametrize("reserved", ["text-chunks", "reasoning-chunks", "tool-call-chunks"])
async def test_append_refuses_a_reserved_row_type_and_stores_nothing(
    make_store: Factory, mk: Any, reserved: str
) -> None:
    store = make_store()
    async with await store.create(mk.header()) as writer:
        await writer.append(mk.one_turn()[:2])
        await writer.flush()
        bad = make_event(reserved, 2, 5, {"x": 1}, ignorable=True)
        with pytest.raises(ValueError, match="reserved for packed chunk rows"):
            await writer.append([mk.one_turn()[2], bad])
        await writer.append(mk.one_turn()[2:])  # nothing of the refused batch was stored
    async with await make_store().open("s-1", "read") as reader:
        assert [e.type for e in await reader.read()] == [e.type for e in mk.one_turn()]
    await store.aclose()


async def test_a_stored_line_with_a_reserved_type_is_corruption_naming_it(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    events = mk.one_turn()
    reserved = b'{"type":"text-chunks","seq":2,"time":5,"ignorable":true,"data":{"x":1}}'
    # in an open turn (no turn/end after it), where a torn-tail rule alone would erase it
    lines = [*log_lines(mk, "s-1", events[:2]), reserved, *map(encode_event, events[3:5])]
    path = put(store, mk.header(), store_bytes(store, lines))
    before = path.read_bytes()
    for access in ("read", "write"):
        with pytest.raises(SessionPersistenceCorruptionError) as info:
            await make_store().open("s-1", access)
        assert (info.value.line, info.value.artifact) == (4, str(path))
    assert path.read_bytes() == before
    await store.aclose()


async def test_a_stored_line_whose_type_is_an_object_is_corruption_naming_it(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    events = mk.one_turn()
    odd = b'{"type":{"a":1},"seq":2,"time":5,"data":{}}'
    lines = [*log_lines(mk, "s-1", events[:2]), odd, *map(encode_event, events[3:])]
    path = put(store, mk.header(), store_bytes(store, lines))
    for access in ("read", "write"):
        with pytest.raises(SessionPersistenceCorruptionError) as info:
            await make_store().open("s-1", access)
        assert (info.value.line, info.value.artifact) == (4, str(path))
    await store.aclose()
