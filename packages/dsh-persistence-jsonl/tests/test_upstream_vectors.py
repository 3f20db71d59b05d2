"""Issue 13 §3: the TypeScript harness's JSONL persistence test cases, as facts of our own tests.

Each test names the upstream case it ports (``packages/session/session-persistence-jsonl/tests/``
``jsonl.spec.ts``, ``zstd.spec.ts`` and ``zstd.compat.spec.ts``, MIT, Copyright (c) 2026
DeepSeek): the inputs and the expected outputs are the harness's, the code is ours.
``win32.spec.ts`` tests the Win32 publish and directory helpers through a mocked ``kernel32``
binding (error-code mapping, staging siblings): nothing in it is platform independent, so the
Windows-style path facts come from ``jsonl.spec.ts``'s ``projectKey`` case instead.

Where our backend deliberately differs, the test holds our behaviour and its docstring says how
and why. The differences that recur:

- Storage serves what is stored: closing an interrupted turn (``interrupted_turn_closers``) is
  the writer's job (the agent loop appends the closers), where upstream's ``load`` appends them.
- Damage rule (issue 24): a bad line followed by *any* intact line is corruption (upstream:
  only when a ``turn/end`` follows); a read never repairs a torn tail, the first append of a
  write handle truncates it (upstream's ``load`` repairs).
- A torn final zstd frame is discarded whole (DESIGN §5, reference §3.5): no complete records
  are salvaged from it.
- Our zstd frames must carry the content checksum (a frame without one is corruption), and
  garbage after the last frame with no magic number after it is a torn tail, not corruption.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path
from typing import Any, cast

import pytest

from dsh_persistence import (
    SessionAlreadyExistsError,
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
    SessionPersistenceNotFoundError,
    SessionStorageError,
    export_session,
)
from dsh_persistence_jsonl import JsonlPersistence, RootEncodingError, encode_segment, project_key
from dsh_persistence_jsonl._zstdframes import (
    FrameError,
    FrameScan,
    compress_frame,
    decompress_frame,
    scan_frames,
)
from dsh_session import (
    TOOL_NOT_STARTED,
    Session,
    SessionEvent,
    SessionHeader,
    SessionValidationError,
    decode_header_line,
    encode_event,
    encode_header_line,
    interrupted_turn_closers,
    make_event,
)

MAGIC = b"\x28\xb5\x2f\xfd"


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _meta(session_id: str, cwd: str | None = None) -> SessionHeader:
    """The harness's ``meta(id, cwd?)``: version 0, ``createdAt`` 1000."""
    wire: dict[str, Any] = {"type": "session", "version": 0, "id": session_id, "createdAt": 1000}
    if cwd is not None:
        wire["cwd"] = cwd
    return decode_header_line(_json(wire))[0]


def _turn_start(seq: int, time: int, turn: int) -> bytes:
    return _json({"type": "turn/start", "seq": seq, "time": time, "data": {"turn": turn}})


def _step_start(seq: int, time: int, turn: int) -> bytes:
    return _json(
        {"type": "step/start", "seq": seq, "time": time, "data": {"turn": turn, "step": 1}}
    )


def _turn_end(seq: int, time: int, turn: int) -> bytes:
    data = {"turn": turn, "reason": {"kind": "completed"}}
    return _json({"type": "turn/end", "seq": seq, "time": time, "data": data})


def _scanner_header(session_id: str) -> bytes:
    """The header line of the ``scanLog`` unit cases (``createdAt`` 1, ``delegationDepth`` 0)."""
    wire = {"type": "session", "version": 0, "id": session_id, "createdAt": 1}
    return _json({**wire, "delegationDepth": 0})


def _plain(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def _put(store: JsonlPersistence, header: SessionHeader, data: bytes) -> Path:
    path = store.log_path(header)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _put_log(root: Path, session_id: str, lines: list[bytes]) -> tuple[JsonlPersistence, Path]:
    """A plain root holding one no-cwd log of ``lines`` (the first is the header)."""
    store = JsonlPersistence(root)
    return store, _put(store, _meta(session_id), _plain(lines))


async def _read(store: JsonlPersistence, session_id: str) -> list[SessionEvent]:
    async with await store.open(session_id, "read") as reader:
        return list(await reader.read())


async def _seqs(store: JsonlPersistence, session_id: str) -> list[int]:
    return [event.seq for event in await _read(store, session_id)]


async def _corruption(
    store: JsonlPersistence, session_id: str
) -> SessionPersistenceCorruptionError:
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        await store.open(session_id, "read")
    return info.value


# -- jsonl.spec.ts, "format helpers": path encoding -----------------------------------------


@pytest.mark.parametrize(
    ("raw", "encoded"),
    [
        ("..", "~002E~002E"),
        (".", "~002E"),
        ("a/b", "a~002Fb"),
        ("/etc/passwd", "~002Fetc~002Fpasswd"),
        ("a\x00b", "a~0000b"),
        ("plain-ID_1.2", "plain-ID_1.2"),
        ("a~b", "a~007Eb"),
    ],
)
def test_encode_segment_neutralizes_traversal_separators_and_absolute_paths(
    raw: str, encoded: str
) -> None:
    """jsonl.spec.ts: "encodeSegment neutralizes traversal, separators, and absolute paths"."""
    assert encode_segment(raw) == encoded


def test_encode_segment_is_injective_over_utf16_including_lone_surrogates() -> None:
    """jsonl.spec.ts: "encodeSegment is injective over UTF-16, incl. lone surrogates"."""
    high, low = encode_segment("\ud800"), encode_segment("\udc00")
    assert (high, low) == ("~D800", "~DC00")
    assert encode_segment("~002F") != encode_segment("/")


def test_encode_segment_rejects_an_empty_id() -> None:
    """jsonl.spec.ts: "encodeSegment rejects an empty id"."""
    with pytest.raises(ValueError, match="empty"):
        encode_segment("")


@pytest.mark.parametrize(
    ("cwd", "key"),
    [
        ("/Users/qyj/work/deepseek-harness", "--Users-qyj-work-deepseek-harness--"),
        ("C:\\work\\agent", "--C-work-agent--"),
        ("/开发/~agent", "--~5F00~53D1-~007Eagent--"),
        ("/", "--root--"),
    ],
)
def test_project_key_normalizes_project_paths_into_readable_names(cwd: str, key: str) -> None:
    """jsonl.spec.ts: "projectKey normalizes project paths into bounded readable names"."""
    assert project_key(cwd) == key


def test_project_key_is_lossy_bounded_and_refuses_an_empty_path() -> None:
    """jsonl.spec.ts: "projectKey normalizes project paths into bounded readable names" (the
    lossy pair, the 255-character bound and the empty path)."""
    assert project_key("/a/b-c") == project_key("/a-b/c")
    assert len(project_key("/" + "x" * 1_000)) == 255
    with pytest.raises(ValueError, match="empty"):
        project_key("")


@pytest.mark.parametrize(
    ("cwd", "key"),
    [
        ("C:\\", "--C---"),
        ("C:/Users/me", "--C-Users-me--"),
        ("c:\\Work\\", "--c-Work---"),
        ("\\\\server\\share\\proj", "--server-share-proj--"),
        ("D:\\my project\\src", "--D-my~0020project-src--"),
    ],
)
def test_windows_style_project_keys_are_platform_independent(cwd: str, key: str) -> None:
    """jsonl.spec.ts: "projectKey normalizes project paths into bounded readable names", with
    more Windows-style inputs run through the same rule (format.ts ``projectKey``: a run of
    ``/``, ``\\`` or ``:`` is one ``-``, leading ``-`` stripped, trailing ones kept). The key
    depends on the text of the cwd only, never on the host's path rules."""
    assert project_key(cwd) == key


def test_a_log_lives_at_project_key_then_encoded_id_then_the_fixed_file_name(
    tmp_path: Path,
) -> None:
    """jsonl.spec.ts: "lazy materialization: create() writes no file until the first append"
    (the located path); zstd.spec.ts: "writes .jsonl.zstd by default ..." (the file name); and
    "list discovers sessions across multiple project directories" (no cwd → ``_no-cwd``)."""
    plain, packed = (
        JsonlPersistence(tmp_path / "p"),
        JsonlPersistence(tmp_path / "z", compression="zstd"),
    )
    assert plain.log_path(_meta("lazy", "/work")) == tmp_path / "p/--work--/lazy/session.jsonl"
    assert (
        packed.log_path(_meta("lazy", "/work")) == tmp_path / "z/--work--/lazy/session.jsonl.zstd"
    )
    assert plain.log_path(_meta("p3")) == tmp_path / "p/_no-cwd/p3/session.jsonl"
    assert plain.log_path(_meta("lazy", "/work")).is_absolute()


def test_a_relative_root_is_resolved_before_locating_a_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jsonl.spec.ts: "resolves a relative custom root before locating a session"."""
    monkeypatch.chdir(tmp_path)
    store = JsonlPersistence("relative-root")
    monkeypatch.chdir("/")
    expected = tmp_path / "relative-root/--work--/relative-location/session.jsonl"
    assert store.log_path(_meta("relative-location", "/work")) == expected


async def test_a_path_traversal_id_stays_under_the_root(tmp_path: Path, mk: Any) -> None:
    """jsonl.spec.ts: "path-traversal session ids are neutralized (no escape from root)"."""
    root = tmp_path / "root"
    store = JsonlPersistence(root)
    async with await store.create(_meta("../../etc/pwn")) as writer:
        await writer.append(mk.one_turn())
    files = [Path(d) / f for d, _dirs, names in os.walk(tmp_path) for f in names]
    assert files
    assert all(root in path.parents for path in files)
    assert store.log_path(_meta("../../etc/pwn")).parent.name == "..~002F..~002Fetc~002Fpwn"
    await store.aclose()


async def test_cwds_with_one_project_key_share_a_directory_and_both_list(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "groups sessions whose cwd paths normalize to the same project
    directory"."""
    store = JsonlPersistence(tmp_path)
    first, second = _meta("normalized-first", "/a/b-c"), _meta("normalized-second", "/a-b/c")
    for header in (first, second):
        async with await store.create(header) as writer:
            await writer.append(mk.one_turn())
    assert store.log_path(first).parent.parent == store.log_path(second).parent.parent
    assert sorted(os.listdir(store.log_path(first).parent.parent)) == [
        "normalized-first",
        "normalized-second",
    ]
    assert sorted(s.header.id for s in await store.list()) == [first.id, second.id]
    await store.aclose()


async def test_a_resumed_session_keeps_its_location_and_a_fork_gets_its_own(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "keeps the same location on resume and gives a fork its own location"."""
    store = JsonlPersistence(tmp_path)
    parent = _meta("location-parent", "/work")
    async with await store.create(parent) as writer:
        await writer.append(mk.one_turn())
    async with await store.open(parent.id, "read") as reader:
        assert store.log_path(reader.header) == store.log_path(parent)
    child = _meta("location-child", "/work")
    assert store.log_path(child) != store.log_path(parent)
    assert store.log_path(child) == tmp_path / "--work--/location-child/session.jsonl"
    await store.aclose()


# -- jsonl.spec.ts: round trip and export ----------------------------------------------------


async def test_a_round_trip_keeps_chunks_verbatim_and_export_is_the_file_byte_for_byte(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "round-trip is byte-identical (incl. assistant/chunk verbatim)" and
    "readRaw returns the stored artifact text verbatim with its original filename". Our export
    is ``export_session`` (no file name: the caller picks the output); for an unpacked plain log
    it is the stored file, byte for byte."""
    chunk: dict[str, Any] = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0}}
    log = [
        make_event("turn/start", 0, 1, {"turn": 1}),
        make_event("step/start", 1, 2, {"turn": 1, "step": 1}),
        make_event("assistant/chunk", 2, 3, {**chunk, "chunk": {**chunk["chunk"], "text": "he"}}),
        make_event("assistant/chunk", 3, 4, {**chunk, "chunk": {**chunk["chunk"], "text": "llo"}}),
        make_event(
            "assistant/message",
            4,
            5,
            {
                "turn": 1,
                "step": 1,
                "content": [{"type": "text", "text": "hello"}],
                "provenance": {"provider": "mock", "model": "mock"},
            },
            surface_op="append",
            source_event_seqs=[2, 3],
        ),
        make_event("step/end", 5, 6, {"turn": 1, "step": 1}),
        make_event("turn/end", 6, 7, {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    store = JsonlPersistence(tmp_path / "root")
    async with await store.create(_meta("chunks")) as writer:
        await writer.append(log)
    assert await _read(store, "chunks") == log
    out = tmp_path / "export.jsonl"
    await export_session(store, "chunks", out)
    stored = store.log_path(_meta("chunks")).read_bytes()
    assert out.read_bytes() == stored
    assert stored.split(b"\n")[0] == encode_header_line(_meta("chunks"))
    await store.aclose()


# -- jsonl.spec.ts: format refusals ----------------------------------------------------------


async def test_a_structurally_foreign_future_header_is_unsupported_not_corrupt(
    tmp_path: Path,
) -> None:
    """jsonl.spec.ts: "refuses a structurally foreign future header as unsupported, not
    corrupt" and "points a format refusal at the raw log path"."""
    future = _json({"type": "session", "version": 42, "id": "future-shape", "futureOnly": True})
    store, path = _put_log(tmp_path, "future-shape", [future, b'{"future":"row"}'])
    for access in ("read", "write"):
        with pytest.raises(SessionFormatUnsupportedError, match="newer harness") as info:
            await store.open("future-shape", access)
        assert "upgrade" in str(info.value)
        assert f"(raw log: {path})" in str(info.value)
    await store.aclose()


async def test_a_non_object_header_line_stays_a_corruption(tmp_path: Path) -> None:
    """jsonl.spec.ts: "keeps a non-object header line a corruption, not a format refusal"."""
    store, path = _put_log(tmp_path, "scalar-header", [b"42"])
    error = await _corruption(store, "scalar-header")
    assert not isinstance(error, SessionFormatUnsupportedError)
    assert (error.line, error.artifact) == (1, str(path))
    assert "JSON object" in str(error)
    await store.aclose()


async def test_a_foreign_version_header_with_a_non_string_id_is_still_a_format_refusal(
    tmp_path: Path,
) -> None:
    """jsonl.spec.ts: "names a foreign-version header by its stringified non-string id".
    Differs: our refusal names the session asked for (the id the caller knows; the stored id
    of a foreign format is not trusted even for its type), with the version it found."""
    store, _path = _put_log(
        tmp_path, "numeric-id", [_json({"type": "session", "version": 42, "id": 123})]
    )
    with pytest.raises(SessionFormatUnsupportedError) as info:
        await store.open("numeric-id", "read")
    assert "'numeric-id'" in str(info.value)
    assert "version 42" in str(info.value)
    await store.aclose()


@pytest.mark.parametrize(
    ("label", "lines"),
    [
        ("a header-less / empty log", []),
        ("a corrupt header line", [b"not json"]),
        ("a non-session first line", [b'{"type":"event"}']),
    ],
)
async def test_a_log_without_a_valid_header_is_corruption_on_line_1(
    tmp_path: Path, label: str, lines: list[bytes]
) -> None:
    """jsonl.spec.ts: "rejects a header-less / empty log", "rejects a corrupt header line",
    "rejects a non-session first line"."""
    store, path = _put_log(tmp_path, "s", lines)
    error = await _corruption(store, "s")
    assert (error.line, error.artifact) == (1, str(path)), label
    await store.aclose()


async def test_a_header_record_must_end_in_a_newline(tmp_path: Path) -> None:
    """jsonl.spec.ts: "requires exactly one newline-terminated header record" (the header
    without its newline)."""
    store = JsonlPersistence(tmp_path)
    path = _put(store, _meta("scanner-header"), _scanner_header("scanner-header"))
    error = await _corruption(store, "scanner-header")
    assert (error.line, error.artifact) == (1, str(path))
    assert "incomplete" in str(error)
    await store.aclose()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("createdAt", 1.5),
        ("createdAt", -1),
        ("createdAt", 2**53),
        ("delegationDepth", "1"),
        ("delegationDepth", 1.5),
        ("delegationDepth", -1),
        ("agentPreset", 7),
        ("sandboxMode", "read-only"),
        ("approvalPolicy", "read-only"),
    ],
)
async def test_a_header_failing_the_header_guard_is_corruption_on_line_1(
    tmp_path: Path, field: str, value: object
) -> None:
    """jsonl.spec.ts: "rejects a session header with a %s createdAt" (fractional, negative,
    unsafe), "rejects a session header with %s delegationDepth" (a string, fractional,
    negative), "rejects a session header whose agentPreset is not a string" and "rejects the
    retired %s header field" (sandboxMode, approvalPolicy: ours refuses every key it does not
    know, so the message says "unexpected header key")."""
    wire = {"type": "session", "version": 0, "id": "bad", "createdAt": 1, "delegationDepth": 0}
    store, path = _put_log(tmp_path, "bad", [_json({**wire, field: value})])
    error = await _corruption(store, "bad")
    assert (error.line, error.artifact) == (1, str(path))
    assert field in str(error)
    await store.aclose()


@pytest.mark.parametrize(
    ("line", "created_at", "depth"),
    [
        (b'{"type":"session","version":0,"id":"h","createdAt":-0,"delegationDepth":0}', 0, 0),
        (b'{"type":"session","version":0,"id":"h","createdAt":1,"delegationDepth":-0}', 1, 0),
        (b'{"type":"session","version":0,"id":"h","createdAt":1}', 1, None),
    ],
)
async def test_negative_zero_and_a_missing_delegation_depth_read_as_plain_headers(
    tmp_path: Path, line: bytes, created_at: int, depth: int | None
) -> None:
    """jsonl.spec.ts: "rejects a session header with negative-zero createdAt", "... with
    negative-zero delegationDepth" and "rejects a session header with missing delegationDepth".
    Differs: JSON text ``-0`` is the integer 0 to Python (no signed zero among integers), so the
    header reads as ``0``; and our header keeps ``delegationDepth`` optional (absent reads as
    ``None``, and is never written then), where upstream always writes it and refuses its
    absence."""
    store, _path = _put_log(tmp_path, "h", [line])
    async with await store.open("h", "read") as reader:
        assert (reader.header.created_at, reader.header.delegation_depth) == (created_at, depth)
    await store.aclose()


async def test_the_agent_preset_of_a_header_round_trips(tmp_path: Path, mk: Any) -> None:
    """jsonl.spec.ts: "round-trips the agent preset a session was composed from"."""
    wire = {"type": "session", "version": 0, "id": "composed", "createdAt": 1}
    header = decode_header_line(_json({**wire, "delegationDepth": 0, "agentPreset": "minimal"}))[0]
    store = JsonlPersistence(tmp_path)
    async with await store.create(header) as writer:
        await writer.append(mk.one_turn())
    async with await JsonlPersistence(tmp_path).open("composed", "read") as reader:
        assert reader.header.agent_preset == "minimal"
    assert b'"agentPreset":"minimal"' in store.log_path(header).read_bytes().split(b"\n")[0]
    await store.aclose()


async def test_stored_legacy_request_events_are_served_and_refused_by_the_session(
    tmp_path: Path,
) -> None:
    """jsonl.spec.ts: "rejects a stored v0 log containing a legacy request/header-delta event"
    and "rejects a stored v0 full header carrying the legacy fallback reason". Differs in
    where: our storage is vocabulary-neutral and serves the stored events; restoring them
    into a ``Session`` refuses them (``SessionValidationError``), so no resumed session ever
    holds them."""
    header = _scanner_header("legacy")
    delta = _json(
        {"type": "request/header-delta", "seq": 1, "time": 2, "data": {"config": {"model": "m"}}}
    )
    fallback_data = {"header": {"config": {"model": "legacy"}}, "reason": "fallback"}
    fallback = _json({"type": "request/header", "seq": 0, "time": 1, "data": fallback_data})
    for lines, seq in (([_turn_start(0, 1, 1), delta, _turn_end(2, 3, 1)], 1), ([fallback], 0)):
        store, _path = _put_log(tmp_path / str(seq), "legacy", [header, *lines])
        events = await _read(store, "legacy")
        assert len(events) == len(lines)
        with pytest.raises(SessionValidationError) as info:
            Session(_meta("legacy"), events)
        assert info.value.seq == seq
        await store.aclose()


# -- jsonl.spec.ts, "scanLog unit": torn-tail scanning of a plain log ------------------------


async def test_a_torn_fragment_after_a_boundary_newline_is_ignored_and_cut_before_appending(
    tmp_path: Path,
) -> None:
    """jsonl.spec.ts: "handles empty writes, boundary newlines, torn fragments, and scanner
    completion": the events are the one complete record, the committed bytes end after its
    newline."""
    header, event = _scanner_header("lifecycle"), _turn_start(0, 1, 1)
    store, path = _put_log(tmp_path, "lifecycle", [header])
    path.write_bytes(header + b"\n" + event + b"\nignored torn tail")
    assert await _seqs(store, "lifecycle") == [0]
    async with await store.open("lifecycle", "write") as writer:
        await writer.append(
            [make_event("turn/end", 1, 2, {"turn": 1, "reason": {"kind": "completed"}})]
        )
    assert path.read_bytes() == _plain([header, event, _turn_end(1, 2, 1)])
    await store.aclose()


async def test_a_bad_line_followed_by_an_intact_line_is_corruption_even_without_a_turn_end(
    tmp_path: Path,
) -> None:
    """jsonl.spec.ts: "keeps scanning after a tolerable corrupt suffix until a committed turn
    end appears" (first half). Differs: upstream keeps ``[seq 0]`` and drops the rest, because
    no ``turn/end`` follows the bad line; our rule (issue 24) is that a crash only damages the
    end of a log, so an intact line after damage proves the damage is inside it: corruption
    naming line 3, and nothing is truncated."""
    lines = [_scanner_header("c"), _turn_start(0, 1, 1), b"{not json", _step_start(1, 2, 1)]
    store, path = _put_log(tmp_path, "c", lines)
    before = path.read_bytes()
    for access in ("read", "write"):
        with pytest.raises(SessionPersistenceCorruptionError) as info:
            await store.open("c", access)
        assert (info.value.line, info.value.artifact) == (3, str(path))
    assert path.read_bytes() == before
    await store.aclose()


async def test_a_final_turn_end_with_a_seq_gap_is_a_discardable_tail(tmp_path: Path) -> None:
    """jsonl.spec.ts: "keeps scanning after a tolerable corrupt suffix until a committed turn
    end appears" (second half: a ``turn/end`` at seq 1 right after the header). Differs:
    upstream counts the gapped ``turn/end`` itself as committed ("seq gap in committed
    region"); ours judges a bad line by what follows it, and nothing does, so it is a tail:
    no events, cut before the next append."""
    header = _scanner_header("g0")
    store, path = _put_log(tmp_path, "g0", [header, _turn_end(1, 2, 1)])
    assert await _seqs(store, "g0") == []
    async with await store.open("g0", "write") as writer:
        await writer.append([make_event("turn/start", 0, 3, {"turn": 1})])
    assert path.read_bytes() == _plain([header, _turn_start(0, 3, 1)])
    await store.aclose()


@pytest.mark.parametrize(
    ("case", "body", "seqs"),
    [
        (
            "a seq gap after the last turn/end bounds the preserved tail",
            [_turn_start(0, 1, 1), _step_start(2, 2, 1)],
            [0],
        ),
        (
            "a corrupt line after the last turn/end bounds the preserved tail",
            [_turn_start(0, 1, 1), b"{not json"],
            [0],
        ),
        (
            "tolerates a seq gap AFTER a turn/end (uncommitted tail)",
            [_turn_start(0, 1, 1), _turn_end(1, 2, 1), _step_start(9, 3, 2)],
            [0, 1],
        ),
        (
            "a header-only log (no event lines at all) preserves nothing",
            [],
            [],
        ),
    ],
)
async def test_the_clean_prefix_is_served_and_the_rest_is_a_tail(
    tmp_path: Path, case: str, body: list[bytes], seqs: list[int]
) -> None:
    """jsonl.spec.ts: "a seq gap after the last turn/end bounds the preserved tail (torn
    fragment tolerated)", "a corrupt line after the last turn/end bounds the preserved tail",
    "tolerates a seq gap AFTER a turn/end (uncommitted tail)" and "a header-only log (no event
    lines at all) preserves nothing — committedBytes is the header". The committed bytes are
    the header and the served lines: the next append is written right after them."""
    header = _scanner_header("t")
    store, path = _put_log(tmp_path, "t", [header, *body])
    assert await _seqs(store, "t") == seqs, case
    async with await store.open("t", "write") as writer:
        await writer.append([make_event("turn/start", len(seqs), 9, {"turn": 7})])
    assert path.read_bytes() == _plain([header, *body[: len(seqs)], _turn_start(len(seqs), 9, 7)])
    await store.aclose()


@pytest.mark.parametrize(
    ("case", "body", "line", "reason"),
    [
        (
            "rejects a seq gap BEFORE a later committed turn/end (committed data damaged)",
            [_turn_start(0, 1, 1), _step_start(2, 2, 1), _turn_end(3, 3, 1)],
            3,
            "expected seq 1, got 2",
        ),
        (
            "rejects a corrupt line BEFORE a later committed turn/end (committed data damaged)",
            [b"{not json", _turn_end(1, 2, 1)],
            2,
            "undecodable record",
        ),
    ],
)
async def test_damage_before_a_committed_turn_end_is_corruption_naming_the_line(
    tmp_path: Path, case: str, body: list[bytes], line: int, reason: str
) -> None:
    """jsonl.spec.ts: "rejects a seq gap BEFORE a later committed turn/end (committed data
    damaged)" and "rejects a corrupt line BEFORE a later committed turn/end (committed data
    damaged)"."""
    store, path = _put_log(tmp_path, "d", [_scanner_header("d"), *body])
    error = await _corruption(store, "d")
    assert (error.line, error.artifact) == (line, str(path)), case
    assert reason in str(error)
    await store.aclose()


def _text_chunks(seq0: int, time0: int, dt: list[int], texts: list[str]) -> bytes:
    data = {"turn": 1, "step": 1, "index": 0, "dt": dt, "texts": texts}
    return _json({"type": "text-chunks", "seq0": seq0, "time0": time0, "data": data})


async def test_a_packed_row_advances_the_seq_cursor_by_its_whole_run(tmp_path: Path) -> None:
    """jsonl.spec.ts: "scanLog: a packed row advances the seq cursor by its whole run"."""
    lines = [
        _scanner_header("rows"),
        _turn_start(0, 1, 1),
        _text_chunks(1, 2, [1, 1], ["a", "b", "c"]),
        _turn_end(4, 5, 1),
    ]
    store, _path = _put_log(tmp_path, "rows", lines)
    events = await _read(store, "rows")
    assert [e.seq for e in events] == [0, 1, 2, 3, 4]
    expected: dict[str, Any] = {
        "turn": 1,
        "step": 1,
        "chunk": {"type": "text-delta", "index": 0, "text": "b"},
    }
    assert events[2] == make_event("assistant/chunk", 2, 3, expected)
    await store.aclose()


async def test_a_malformed_packed_row_before_a_turn_end_is_corruption(tmp_path: Path) -> None:
    """jsonl.spec.ts: "scanLog: a malformed packed row in the committed region rejects like
    corrupt JSON" (``dt`` shorter than the run needs)."""
    lines = [_scanner_header("bad-row"), _text_chunks(0, 1, [], ["a", "b"]), _turn_end(2, 3, 1)]
    store, path = _put_log(tmp_path, "bad-row", lines)
    error = await _corruption(store, "bad-row")
    assert (error.line, error.artifact) == (2, str(path))
    await store.aclose()


async def test_a_packed_row_with_a_seq_gap_in_the_tail_is_dropped_whole(tmp_path: Path) -> None:
    """jsonl.spec.ts: "scanLog: a packed row with a mid-run seq gap after the last turn/end
    drops the whole row": the committed bytes end before the row."""
    header = _scanner_header("row-gap")
    lines = [header, _turn_start(0, 1, 1), _text_chunks(2, 2, [1, 1], ["a", "b", "c"])]
    store, path = _put_log(tmp_path, "row-gap", lines)
    assert await _seqs(store, "row-gap") == [0]
    async with await store.open("row-gap", "write") as writer:
        await writer.append([make_event("step/start", 1, 2, {"turn": 1, "step": 1})])
    assert path.read_bytes() == _plain([header, _turn_start(0, 1, 1), _step_start(1, 2, 1)])
    await store.aclose()


# -- jsonl.spec.ts, "durability and crash semantics" -----------------------------------------


async def test_an_interrupted_turn_is_served_as_stored_and_its_closers_continue_the_log(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "crash recovery: load preserves the interrupted turn and closes it with a
    synthetic turn/end {interrupted}" and "a header-only log (open turn, no turn/end) preserves
    the open turn on load and closes it". Differs in who closes: our read serves the stored
    events (seqs 0..7, the torn seq-8 fragment gone) and the writer appends
    ``interrupted_turn_closers`` (step/end 8, turn/end {interrupted} 9), as the agent loop does
    on resume; the next turn then continues at seq 10."""
    store = JsonlPersistence(tmp_path)
    header = _meta("crash", "/proj")
    async with await store.create(header) as writer:
        await writer.append(mk.one_turn())
    path = store.log_path(header)
    with path.open("ab") as f:
        f.write(_turn_start(6, 8, 2) + b"\n" + _step_start(7, 9, 2) + b"\n")
        f.write(b'{"type":"assistant/chunk","seq":8,"ti')
    async with await store.open("crash", "write") as writer:
        events = list(await writer.read())
        assert [e.seq for e in events] == list(range(8))
        closers = interrupted_turn_closers(events, shape="flat")
        assert [(e.type, e.seq) for e in closers] == [("step/end", 8), ("turn/end", 9)]
        assert closers[-1].to_wire()["data"]["reason"] == {"kind": "interrupted"}
        await writer.append(closers)
        await writer.append(mk.one_turn(10, turn=3)[:1])
        await writer.append(
            [make_event("turn/end", 11, 12, {"turn": 3, "reason": {"kind": "completed"}})]
        )
    assert await _seqs(JsonlPersistence(tmp_path), "crash") == list(range(12))
    await store.aclose()


async def test_an_unstarted_tool_call_in_an_open_turn_gets_a_not_started_closer(
    tmp_path: Path, mk: Any
) -> None:
    """contract.ts (run by jsonl.spec.ts against JSONL): "crash recovery: an unstarted assistant
    tool request gets a retryable synthetic result", over a JSONL log reopened by a fresh
    instance. Same split as above: storage serves, the closers answer the call."""
    store = JsonlPersistence(tmp_path)
    header = _meta("interrupted-toolcall")
    call: dict[str, Any] = {"type": "tool-call", "id": "call-x", "name": "bash", "arguments": "{}"}
    async with await store.create(header) as writer:
        await writer.append(mk.one_turn())
        await writer.append(
            [
                make_event("turn/start", 6, 7, {"turn": 2}),
                make_event("step/start", 7, 8, {"turn": 2, "step": 1}),
                make_event(
                    "assistant/message",
                    8,
                    9,
                    {
                        "turn": 2,
                        "step": 1,
                        "content": [call],
                        "provenance": {"provider": "mock", "model": "mock"},
                    },
                    surface_op="append",
                ),
            ]
        )
    events = await _read(JsonlPersistence(tmp_path), "interrupted-toolcall")
    closers = interrupted_turn_closers(events, shape="flat")
    assert [e.type for e in closers] == ["tool/result", "step/end", "turn/end"]
    result = closers[0].to_wire()["data"]
    assert (result["callId"], result["isError"], result["error"]["code"]) == (
        "call-x",
        True,
        TOOL_NOT_STARTED,
    )
    await store.aclose()


@pytest.mark.parametrize("fresh_instance", [False, True])
async def test_only_the_crash_tail_is_cut_and_the_committed_bytes_stay_the_head(
    tmp_path: Path, mk: Any, fresh_instance: bool
) -> None:
    """jsonl.spec.ts: "committed events are never rewritten: only the crash tail is repaired"
    (the same instance) and "append() to a disk-only session adopts it and repairs a crash
    tail" (a fresh instance): the tail ``\\n{"partial`` goes, seqs 0..7 read back."""
    store = JsonlPersistence(tmp_path)
    header = _meta("append-only")
    async with await store.create(header) as writer:
        await writer.append(mk.one_turn())
    path = store.log_path(header)
    committed = path.read_bytes()
    path.write_bytes(committed + b'\n{"partial crash')
    target = JsonlPersistence(tmp_path) if fresh_instance else store
    async with await target.open("append-only", "write") as writer:
        await writer.append(
            [
                make_event("turn/start", 6, 9, {"turn": 2}),
                make_event("turn/end", 7, 10, {"turn": 2, "reason": {"kind": "completed"}}),
            ]
        )
    after = path.read_bytes()
    assert after.startswith(committed)
    assert b"partial" not in after
    assert await _seqs(JsonlPersistence(tmp_path), "append-only") == list(range(8))
    await store.aclose()
    await target.aclose()


async def test_a_header_naming_another_session_is_refused_before_any_repair(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "rejects a mismatched header before repairing either session log": a's
    header names b; opening a (to write, too) refuses and neither file changes."""
    store = JsonlPersistence(tmp_path)
    a, b = _meta("identity-a", "/same"), _meta("identity-b", "/same")
    async with await store.create(b) as writer:
        await writer.append(mk.one_turn())
    a_path = _put(store, a, _plain([encode_header_line(b), _turn_start(0, 1, 1)]) + b'{"tor')
    before_a, before_b = a_path.read_bytes(), store.log_path(b).read_bytes()
    for access in ("read", "write"):
        with pytest.raises(SessionPersistenceCorruptionError, match="identity-b"):
            await store.open("identity-a", access)
    assert (a_path.read_bytes(), store.log_path(b).read_bytes()) == (before_a, before_b)
    await store.aclose()


async def test_a_re_append_of_a_stored_seq_is_refused(tmp_path: Path, mk: Any) -> None:
    """jsonl.spec.ts: "rejects a re-append of an already-stored seq" (upstream says "seq
    mismatch"; ours names the seq it expected)."""
    store = JsonlPersistence(tmp_path)
    async with await store.create(_meta("reappend")) as writer:
        await writer.append(mk.one_turn())
        with pytest.raises(ValueError, match="expected seq 6"):
            await writer.append(mk.one_turn())
    assert await _seqs(store, "reappend") == list(range(6))
    await store.aclose()


async def test_one_id_in_two_project_directories_is_refused_by_open(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "load and list reject one id materialized in multiple project
    directories". Differs for ``list``: ours lists what it finds (each snapshot names its own
    file), ``open`` and ``stat`` refuse the id naming both paths."""
    store = JsonlPersistence(tmp_path)
    paths = []
    for cwd in ("/a", "/b"):
        header = _meta("duplicate", cwd)
        paths.append(
            _put(
                store,
                header,
                _plain([encode_header_line(header)] + [encode_event(e) for e in mk.one_turn()]),
            )
        )
    for call in (store.open("duplicate", "read"), store.stat("duplicate")):
        with pytest.raises(
            SessionPersistenceCorruptionError, match="multiple project directories"
        ) as info:
            await call
        assert all(str(p) in str(info.value) for p in paths)
    assert sorted(str(s.plain_path) for s in await store.list()) == sorted(map(str, paths))
    await store.aclose()


# -- zstd.spec.ts and zstd.compat.spec.ts: frame structure ------------------------------------


def test_concatenated_checksummed_frames_scan_and_a_frame_limit_is_honoured() -> None:
    """zstd.spec.ts: "scans concatenated checksummed frames and honors a frame limit"."""
    first, second = compress_frame(b"header\n"), compress_frame(b"event\n")
    stream = first + second
    assert scan_frames(b"") == FrameScan([], None)
    assert scan_frames(stream) == FrameScan([(0, len(first)), (len(first), len(stream))], None)
    assert scan_frames(stream, max_frames=1) == FrameScan([(0, len(first))], None)
    assert first[4] & 0x04 == second[4] & 0x04 == 0x04
    assert decompress_frame(first, 0) == b"header\n"
    assert b"".join(decompress_frame(stream[s:e], s) for s, e in scan_frames(stream).frames) == (
        b"header\nevent\n"
    )


def test_every_frame_starts_with_the_magic_and_one_missing_checksum_byte_is_torn() -> None:
    """zstd.compat.spec.ts: "round-trips concatenated checksummed frames through the built-in
    Node API" (the frame facts; upstream also salvages the torn frame's plaintext, which our
    discard-whole rule never does)."""
    header = b'{"type":"session","version":0,"id":"compat","createdAt":1}\n'
    event = b'{"type":"turn/start","seq":0,"turn":1}\n'
    stream = compress_frame(header) + compress_frame(event)
    scan = scan_frames(stream)
    assert scan.torn_start is None
    assert [stream[s : s + 4] for s, _e in scan.frames] == [MAGIC, MAGIC]
    event_frame = stream[scan.frames[1][0] :]
    assert scan_frames(event_frame[:-1]) == FrameScan([], 0)


def _with_checksum(frame: bytes) -> bytes:
    return frame + b"\x00" * 4


@pytest.mark.parametrize(
    ("data", "torn"),
    [
        (MAGIC[:2], 0),
        (MAGIC, 0),
        (MAGIC + b"\x04", 0),  # upstream: 0x00, no window descriptor yet
        (MAGIC + bytes([0x24, 0x00, 0x01, 0x00]), 0),  # two of three block-header bytes
        (MAGIC + bytes([0x24, 0x00]) + bytes([(5 << 3) | 1, 0, 0]) + b"\x01\x02", 0),
    ],
)
def test_incomplete_frame_regions_are_torn(data: bytes, torn: int) -> None:
    """zstd.spec.ts: "distinguishes incomplete frame regions from invalid complete structure"
    (the torn half). Differs: our frames must carry the content checksum, so the descriptors
    have bit 0x04 set (upstream's 0x00 and 0x20 frames are refused by ours, see below)."""
    assert scan_frames(data) == FrameScan([], torn)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (MAGIC + b"\x08", "reserved bit"),
        (MAGIC + bytes([0x24, 0x00, 0x07, 0x00, 0x00]), "reserved block type"),
        (MAGIC + b"\x00", "no content checksum"),
        (MAGIC + bytes([0x20, 0x00, 0x01, 0x00]), "no content checksum"),
        (b"\x00" * 4 + MAGIC + b"\x04", "bad magic number, with a frame after it"),
    ],
)
def test_invalid_complete_structure_is_a_frame_error(data: bytes, reason: str) -> None:
    """zstd.spec.ts: "distinguishes incomplete frame regions from invalid complete structure"
    (the invalid half: reserved descriptor bit, reserved block type, bad magic). Differs: a
    frame without the checksum flag is refused (a checksum that matches is what proves a
    complete frame was no torn write); bad magic is refused only with a magic number after it
    (zeros a crash left at the end are torn, next test)."""
    with pytest.raises(FrameError, match=reason):
        scan_frames(data)


def test_four_bytes_of_garbage_after_the_last_frame_are_torn_like_longer_garbage() -> None:
    """zstd.spec.ts: "distinguishes incomplete frame regions from invalid complete structure"
    (``Buffer.alloc(4)``: invalid frame magic). Differs: after the last frame, garbage with no
    magic number after it is a torn tail whatever its length (it was refused as bad magic when
    shorter than five bytes, and torn from five on: fixed with this test)."""
    frame = compress_frame(b"header\n")
    for garbage in (b"\x00", b"\x00" * 4, b"\x00" * 5, b"\x00" * 600):
        assert scan_frames(frame + garbage) == FrameScan([(0, len(frame))], len(frame))
    assert scan_frames(b"\x00" * 4) == FrameScan([], 0)


def _empty_frame(descriptor: int) -> bytes:
    """The smallest frame of a descriptor: header fields zero-filled, one empty last raw block,
    and the checksum when the descriptor has one (upstream's ``emptyStructuralFrame``)."""
    fcs_flag, single = descriptor >> 6, descriptor & 0x20
    dictionary = (0, 1, 2, 4)[descriptor & 3]
    fcs = (1 if single else 0) if fcs_flag == 0 else 1 << fcs_flag
    variable = bytes((0 if single else 1) + dictionary + fcs)
    checksum = b"\x00" * 4 if descriptor & 0x04 else b""
    return MAGIC + bytes([descriptor]) + variable + bytes([1, 0, 0]) + checksum


@pytest.mark.parametrize("descriptor", [0x04, 0x25, 0x46, 0x87, 0xE7])
def test_standard_header_variants_scan_as_one_complete_frame(descriptor: int) -> None:
    """zstd.spec.ts: "covers standard header variants, RLE blocks, multiple blocks, and
    checksums" (descriptors 0x00, 0x21, 0x42, 0x83, 0xE3, each with the checksum bit 0x04 that
    ours requires)."""
    frame = _empty_frame(descriptor)
    assert scan_frames(frame) == FrameScan([(0, len(frame))], None)


def test_rle_blocks_multiple_blocks_and_a_checksum_cut_by_one_byte() -> None:
    """zstd.spec.ts: "covers standard header variants, RLE blocks, multiple blocks, and
    checksums" (the RLE, two-block and checksummed frames)."""
    rle = _with_checksum(MAGIC + bytes([0x24, 0x01, (1 << 3) | (1 << 1) | 1, 0, 0, 0x41]))
    two_blocks = _with_checksum(MAGIC + bytes([0x24, 0x00, 0, 0, 0, 1, 0, 0]))
    for frame in (rle, two_blocks):
        assert scan_frames(frame) == FrameScan([(0, len(frame))], None)
    checksummed = _empty_frame(0x24)
    assert scan_frames(checksummed[:-1]) == FrameScan([], 0)
    assert scan_frames(checksummed) == FrameScan([(0, len(checksummed))], None)


def test_a_frame_whose_checksum_fails_does_not_decode() -> None:
    """zstd.spec.ts: "enforces decoder lifecycle and checksum errors through both
    implementations" (the checksum error: "frame at byte 0 failed validation"; ours says
    where and that it cannot be decompressed)."""
    frame = bytearray(compress_frame(b"frame\n"))
    frame[-1] ^= 0xFF
    with pytest.raises(FrameError, match="zstd frame at byte 0: cannot be decompressed"):
        decompress_frame(bytes(frame), 0)


# -- zstd.spec.ts: the zstd backend ------------------------------------------------------------


def _frames_of(data: bytes) -> list[bytes]:
    return [data[s:e] for s, e in scan_frames(data).frames]


async def _zstd_one_turn(root: Path, mk: Any, session_id: str) -> tuple[JsonlPersistence, Path]:
    store = JsonlPersistence(root, compression="zstd")
    header = _meta(session_id)
    async with await store.create(header) as writer:
        await writer.append(mk.one_turn())
    return store, store.log_path(header)


async def test_a_zstd_log_is_one_header_frame_then_one_frame_per_batch(
    tmp_path: Path, mk: Any
) -> None:
    """zstd.spec.ts: "writes .jsonl.zstd by default with one header frame and one first-batch
    frame" and "appends one frame per durable batch without rewriting prior bytes". Differs:
    our default is ``compression="none"``; zstd is chosen explicitly."""
    store, path = await _zstd_one_turn(tmp_path, mk, "default-zstd")
    data = path.read_bytes()
    assert data[:4] == MAGIC
    assert not path.with_name("session.jsonl").exists()
    frames = _frames_of(data)
    assert len(frames) == 2
    plaintext = b"".join(decompress_frame(f, 0) for f in frames)
    header_line = encode_header_line(_meta("default-zstd"))
    assert plaintext == _plain([header_line, *(encode_event(e) for e in mk.one_turn())])
    async with await store.open("default-zstd", "write") as writer:
        await writer.append(mk.one_turn(6, turn=2)[:1])
    after = path.read_bytes()
    assert after.startswith(data)
    assert len(_frames_of(after)) == 3
    assert await _seqs(JsonlPersistence(tmp_path, compression="zstd"), "default-zstd") == list(
        range(7)
    )
    await store.aclose()


async def test_a_torn_final_frame_with_complete_records_is_discarded_whole(
    tmp_path: Path, mk: Any
) -> None:
    """zstd.spec.ts: "preserves complete records from a torn frame and re-encodes them with
    crash closers" and "recovers complete events when EOF tears only the final frame checksum".
    Differs: a torn final frame is discarded whole (DESIGN §5, seed 001), so the complete
    records inside it are not served (seqs 0..5 only); the next append cuts it and continues
    at seq 6."""
    store, path = await _zstd_one_turn(tmp_path, mk, "recover-torn")
    committed = path.read_bytes()
    second = [_turn_start(6, 7, 2), _turn_end(7, 8, 2)]
    whole = compress_frame(_plain(second))
    for torn in (whole[:-1], whole[: len(whole) // 2]):
        path.write_bytes(committed + torn)
        assert await _seqs(store, "recover-torn") == list(range(6))
    async with await store.open("recover-torn", "write") as writer:
        await writer.append(mk.one_turn(6, turn=2))
    after = path.read_bytes()
    assert after.startswith(committed)
    assert scan_frames(after).torn_start is None
    assert await _seqs(JsonlPersistence(tmp_path, compression="zstd"), "recover-torn") == list(
        range(12)
    )
    await store.aclose()


async def test_a_frame_torn_in_its_header_is_dropped(tmp_path: Path, mk: Any) -> None:
    """zstd.spec.ts: "drops a frame torn in its header before it has produced plaintext"
    (two magic bytes). Differs in when: a read leaves the file as it is; the first append of a
    write handle cuts the two bytes."""
    store, path = await _zstd_one_turn(tmp_path, mk, "partial-magic")
    committed = path.read_bytes()
    path.write_bytes(committed + MAGIC[:2])
    assert await _seqs(store, "partial-magic") == list(range(6))
    assert path.read_bytes() == committed + MAGIC[:2]
    async with await store.open("partial-magic", "write") as writer:
        await writer.append(mk.one_turn(6, turn=2)[:1])
    assert path.read_bytes() == committed + _frames_of(path.read_bytes())[-1]
    await store.aclose()


async def test_a_complete_frame_holding_a_torn_record_is_corruption(
    tmp_path: Path, mk: Any
) -> None:
    """zstd.spec.ts: "rejects a complete frame containing a torn JSONL record"."""
    store, path = await _zstd_one_turn(tmp_path, mk, "complete-bad-jsonl")
    path.write_bytes(path.read_bytes() + compress_frame(b'{"type":"turn/start"'))
    error = await _corruption(store, "complete-bad-jsonl")
    assert "middle of a line" in str(error)
    assert error.artifact == str(path)
    await store.aclose()


async def test_list_skips_odd_zstd_artifacts_and_open_names_the_damage(tmp_path: Path) -> None:
    """zstd.spec.ts: "skips empty, incomplete, and non-header compressed artifacts while
    rejecting malformed header frames" and "rejects missing, empty, and checksum-corrupt
    header frames on targeted reads". Differs for ``list``: ours skips every artifact it
    cannot list (a warning names it), malformed header frames too, where upstream's list
    fails on those; ``open`` refuses each as corruption on line 1."""
    store = JsonlPersistence(tmp_path, compression="zstd")
    bad_checksum = bytearray(compress_frame(_scanner_header("bad-checksum") + b"\n"))
    bad_checksum[-1] ^= 0xFF
    artifacts = {
        "empty": (b"", "no complete zstd frame"),
        "partial": (MAGIC, "no complete zstd frame"),
        "not-header": (compress_frame(b'{"type":"turn/start"}\n'), "no version"),
        "two-lines": (
            compress_frame(_scanner_header("two-lines") + b'\n{"type":"turn/start"}\n'),
            "not exactly one header line",
        ),
        "empty-header": (compress_frame(b""), "not exactly one header line"),
        "bad-checksum": (bytes(bad_checksum), "cannot be decompressed"),
    }
    for session_id, (data, _reason) in artifacts.items():
        _put(store, _meta(session_id), data)
    assert await store.list() == []
    for session_id, (_data, reason) in artifacts.items():
        error = await _corruption(store, session_id)
        assert error.line == 1, session_id
        assert reason in str(error), session_id
    await store.aclose()


async def test_list_reads_a_multi_block_header_frame_without_decoding_a_corrupt_event_frame(
    tmp_path: Path, mk: Any
) -> None:
    """zstd.spec.ts: "lists from a multi-chunk header frame without decoding a corrupt event
    frame" (a 24,000-character cwd; the event frame's checksum spoiled, with a frame after
    it so that the damage is not a torn tail)."""
    store = JsonlPersistence(tmp_path, compression="zstd")
    header = _meta("large-header", "/work/" + "x" * 24_000)
    async with await store.create(header) as writer:
        await writer.append(mk.one_turn())
        await writer.append(mk.one_turn(6, turn=2))
    path = store.log_path(header)
    data = bytearray(path.read_bytes())
    _start, end = scan_frames(bytes(data)).frames[1]
    data[end - 1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert [s.header.id for s in await store.list()] == ["large-header"]
    with pytest.raises(SessionPersistenceCorruptionError, match="cannot be decompressed"):
        await store.open("large-header", "read")
    await store.aclose()


async def test_a_root_of_one_encoding_refuses_the_other_in_both_directions(
    tmp_path: Path, mk: Any
) -> None:
    """zstd.spec.ts: "rejects roots owned by the opposite encoding in both directions".
    Differs in when: ours refuses at construction (a probe of the root), as well as at
    lookup and listing."""
    for compression, other in (("none", "zstd"), ("zstd", "none")):
        root = tmp_path / compression
        store = JsonlPersistence(root, compression=compression)  # type: ignore[arg-type]
        async with await store.create(_meta("log")) as writer:
            await writer.append(mk.one_turn())
        with pytest.raises(RootEncodingError, match=f"'{other}'|{other}"):
            JsonlPersistence(root, compression=other)  # type: ignore[arg-type]
        await store.aclose()


async def test_an_opposite_artifact_appearing_later_is_refused_at_lookup_and_listing(
    tmp_path: Path, mk: Any
) -> None:
    """zstd.spec.ts: "rechecks targeted artifacts and listing after an initially empty root"."""
    store = JsonlPersistence(tmp_path, compression="zstd")
    assert await store.list() == []
    late = _meta("late-raw-load", "/late")
    raw = store.log_path(late).with_name("session.jsonl")
    raw.parent.mkdir(parents=True)
    raw.write_bytes(_plain([encode_header_line(late), *(encode_event(e) for e in mk.one_turn())]))
    with pytest.raises(RootEncodingError):
        await store.open("late-raw-load", "read")
    with pytest.raises(RootEncodingError):
        await store.list()
    await store.aclose()


async def test_an_opposite_artifact_appearing_after_create_refuses_materialization(
    tmp_path: Path, mk: Any
) -> None:
    """zstd.spec.ts: "refuses materialization when an opposite artifact appears after create":
    the append raises and no ``session.jsonl.zstd`` is written beside the plain log."""
    store = JsonlPersistence(tmp_path, compression="zstd")
    assert await store.list() == []
    late = _meta("late-raw-materialize", "/late")
    writer = await store.create(late)
    raw = store.log_path(late).with_name("session.jsonl")
    raw.parent.mkdir(parents=True)
    raw.write_bytes(_plain([encode_header_line(late)]))
    with pytest.raises(RootEncodingError):
        await writer.append(mk.one_turn())
    assert sorted(p.name for p in raw.parent.iterdir() if p.name.endswith(".zstd")) == []
    with contextlib.suppress(RootEncodingError):
        await writer.close()
    await store.aclose()


# -- jsonl.spec.ts, "edge cases": the obsolete flat-file layout -----------------------------


@pytest.mark.parametrize(
    ("compression", "name"),
    [
        ("none", "legacy-flat.jsonl"),
        ("zstd", "legacy-flat.jsonl.zstd"),
        ("zstd", "legacy-flat.jsonl"),
    ],
)
async def test_a_log_in_the_obsolete_flat_layout_is_refused_never_ignored(
    tmp_path: Path, mk: Any, caplog: pytest.LogCaptureFixture, compression: str, name: str
) -> None:
    """jsonl.spec.ts: "rejects the obsolete flat-file layout instead of ignoring stored
    sessions" and "rejects a compressed obsolete flat-file artifact during targeted lookup":
    ``<project>/<id>.jsonl`` (or ``.jsonl.zstd``, whichever the root's encoding) is refused by
    ``open`` and ``stat`` (``SessionFormatUnsupportedError`` naming the file) and by ``create``
    of that id; ``list`` skips it with a warning naming it (our ``list`` skips what it cannot
    list, where upstream's fails). A bug found by this case: the file was silently ignored
    (the session "not found", a create of its id succeeding). A session found in the current
    layout is not looked for in the flat one."""
    store = JsonlPersistence(tmp_path, compression=compression)  # type: ignore[arg-type]
    header = _meta("legacy-flat", "/legacy")
    flat = store.log_path(header).parent.parent / name
    flat.parent.mkdir(parents=True)
    flat.write_bytes(
        _plain([encode_header_line(header), *(encode_event(e) for e in mk.one_turn())])
    )
    for call in (
        store.open("legacy-flat", "read"),
        store.stat("legacy-flat"),
        store.create(header),
    ):
        with pytest.raises(SessionFormatUnsupportedError, match="flat-file layout") as info:
            await call
        assert info.value.artifact == str(flat)
    with caplog.at_level("WARNING", logger="dsh_persistence_jsonl"):
        assert await store.list() == []
    assert str(flat) in caplog.text
    async with await store.create(_meta("other", "/legacy")) as writer:
        await writer.append(mk.one_turn())
    assert [s.header.id for s in await store.list()] == ["other"]
    await store.aclose()


# -- jsonl.spec.ts: listing, the root and the session directory ------------------------------


async def test_list_skips_empty_header_less_and_unstorable_logs_beside_a_real_one(
    tmp_path: Path, mk: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """jsonl.spec.ts: "list skips empty and non-header session logs (metadata-only read)" and
    "list rejects a session header whose id cannot name a storage path" (``id: ''``). Differs
    for the second: ours skips it with a warning naming it, as it skips every entry it cannot
    list, where upstream's ``list`` fails."""
    store = JsonlPersistence(tmp_path)
    async with await store.create(_meta("real", "/p")) as writer:
        await writer.append(mk.one_turn())
    junk = {
        "empty": b"",
        "notheader": b'{"type":"turn/start"}\n',
        "badjson": b"not json at all\n",
        "invalid-id": _json({"type": "session", "version": 0, "id": "", "createdAt": 1}) + b"\n",
    }
    for session_id, data in junk.items():
        _put(store, _meta(session_id), data)
    with caplog.at_level("WARNING", logger="dsh_persistence_jsonl"):
        assert [s.header.id for s in await store.list()] == ["real"]
    for session_id in junk:
        assert str(store.log_path(_meta(session_id))) in caplog.text
    await store.aclose()


async def test_list_reads_a_header_line_longer_than_the_8kb_read_chunk(tmp_path: Path) -> None:
    """jsonl.spec.ts: "list reads a header line longer than the 8KB read chunk". Differs in the
    padding: upstream pads with an extra header field it tolerates; ours refuses unknown
    header keys, so a 9,000-character cwd makes the line long."""
    store = JsonlPersistence(tmp_path)
    header = _meta("big", "/" + "x" * 9000)
    _put(store, header, encode_header_line(header) + b"\n")
    assert len(encode_header_line(header)) > 8192
    assert [s.header.id for s in await store.list()] == ["big"]
    await store.aclose()


async def test_a_session_directory_may_hold_more_than_its_transcript(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "keeps the transcript in an extensible session-owned directory": a
    ``metadata.json`` beside the log, a README in the project directory and a session
    directory without a log change nothing."""
    store = JsonlPersistence(tmp_path)
    header = _meta("owned-directory", "/project")
    async with await store.create(header) as writer:
        await writer.append(mk.one_turn())
    directory = store.log_path(header).parent
    (directory / "metadata.json").write_text("{}\n")
    (directory.parent / "README").write_text("project metadata\n")
    (directory.parent / "reserved-session").mkdir()
    assert {"metadata.json", "session.jsonl"} <= set(os.listdir(directory))
    assert [s.header.id for s in await store.list()] == ["owned-directory"]
    assert await _read(store, "owned-directory") == mk.one_turn()
    await store.aclose()


async def test_a_missing_root_lists_nothing_and_a_file_root_is_refused(tmp_path: Path) -> None:
    """jsonl.spec.ts: "list returns nothing when the root directory does not exist", "plugin
    load rejects an existing root that is not a directory" and "list surfaces a root that
    becomes unusable after plugin load" (ours: ``SessionStorageError``, ENOTDIR's message)."""
    assert await JsonlPersistence(tmp_path / "does-not-exist-yet").list() == []
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(NotADirectoryError):
        JsonlPersistence(blocker)
    root = tmp_path / "root"
    store = JsonlPersistence(root)
    root.write_text("not a directory")
    with pytest.raises(SessionStorageError, match="Not a directory"):
        await store.list()
    await store.aclose()


async def test_a_file_at_the_project_directory_path_fails_materialization(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "materialization surfaces a project-directory storage fault" (upstream:
    EEXIST or ENOTDIR). Ours refuses the odd file by name (below a root only real directories
    are used) and writes nothing."""
    store = JsonlPersistence(tmp_path)
    header = _meta("exists-fault", "/x")
    project = store.log_path(header).parent.parent
    project.write_text("x")
    writer = await store.create(header)
    with pytest.raises(SessionPersistenceCorruptionError, match="not a directory") as info:
        await writer.append(mk.one_turn())
    assert info.value.artifact == str(project)
    assert project.read_text() == "x"
    await writer.close()
    await store.aclose()


async def test_a_header_whose_cwd_names_another_project_directory_is_refused(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "list rejects a header whose cwd does not identify its physical log" and
    "accepts an alternate project path only when it identifies the same physical log".
    Differs: ``open`` refuses the mismatch naming the project directory and ``list`` leaves the
    log out, where upstream's ``list`` fails; and an alias through a linked project directory
    is refused too (below a root no link is followed), where upstream accepts one that
    resolves to the same file."""
    store = JsonlPersistence(tmp_path)
    header = _meta("misplaced", "/stored")
    lines = [
        encode_header_line(_meta("misplaced", "/elsewhere")),
        *map(encode_event, mk.one_turn()),
    ]
    path = _put(store, header, _plain(lines))
    with pytest.raises(SessionPersistenceCorruptionError, match="project directory"):
        await store.open("misplaced", "read")
    assert await store.list() == []
    alias = store.log_path(_meta("misplaced", "/alias")).parent.parent
    alias.symlink_to(path.parent.parent, target_is_directory=True)
    path.write_bytes(_plain([encode_header_line(_meta("misplaced", "/alias")), *lines[1:]]))
    with pytest.raises(SessionPersistenceCorruptionError):
        await store.open("misplaced", "read")
    assert await store.list() == []
    await store.aclose()


async def test_a_read_header_is_immutable_and_appends_land_in_the_original_log(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "load returns immutable meta without exposing backend pathing" and
    "create snapshots its meta" (a frozen header: there is nothing to mutate)."""
    store = JsonlPersistence(tmp_path)
    header = _meta("meta-copy", "/proj")
    async with await store.create(header) as writer:
        await writer.append(mk.one_turn())
    async with await store.open("meta-copy", "write") as writer:
        with pytest.raises(ValueError, match="frozen"):
            writer.header.cwd = "/evil"  # type: ignore[misc]
        await writer.append(mk.one_turn(6, turn=2))
    assert await _seqs(JsonlPersistence(tmp_path), "meta-copy") == list(range(12))
    assert not (tmp_path / project_key("/evil")).exists()
    await store.aclose()


# -- jsonl.spec.ts: event data and chunk rows ----------------------------------------------------


@pytest.mark.parametrize("bad", [math.inf, math.nan, -0.0, 2**53 + 1, {1}, print], ids=repr)
async def test_event_data_that_is_not_lossless_json_is_refused_and_materializes_nothing(
    tmp_path: Path, bad: object
) -> None:
    """jsonl.spec.ts: "rejects non-JSON event data: BigInt, function, circular, Map, undefined
    property" (Python stand-ins: an integer no double holds, a set, a function, non-finite and
    negative-zero floats): the append raises and the session is never materialized."""
    store = JsonlPersistence(tmp_path)
    event = make_event(
        "user/message",
        0,
        1,
        {"content": [{"type": "text", "text": "x"}], "source": {"kind": "user"}, "extra": None},
        surface_op="append",
    )
    cast(dict[str, Any], event.data)["extra"] = bad
    writer = await store.create(_meta("serial"))
    with pytest.raises(TypeError, match="not losslessly JSON-serializable"):
        await writer.append([event])
    await writer.close()
    assert await store.list() == []
    assert not store.log_path(_meta("serial")).exists()
    await store.aclose()


async def test_well_formed_json_values_are_stored(tmp_path: Path) -> None:
    """jsonl.spec.ts: "accepts well-formed JSON values (null, booleans, nested
    arrays/objects)"."""
    store = JsonlPersistence(tmp_path)
    extra = {"a": None, "b": True, "c": [1, 2, {"d": "nested"}]}
    data: dict[str, Any] = {
        "content": [{"type": "text", "text": "x"}],
        "source": {"kind": "user"},
        "extra": extra,
    }
    event = make_event("user/message", 0, 1, data, surface_op="append")
    async with await store.create(_meta("json-ok")) as writer:
        await writer.append([event])
    assert await _read(JsonlPersistence(tmp_path), "json-ok") == [event]
    await store.aclose()


async def test_concurrent_sessions_do_not_cross(tmp_path: Path) -> None:
    """jsonl.spec.ts: "concurrent sessions do not cross buffers"."""
    store = JsonlPersistence(tmp_path)

    def turn(text: str) -> list[SessionEvent]:
        message: dict[str, Any] = {
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
        }
        return [
            make_event("turn/start", 0, 1, {"turn": 1}),
            make_event("user/message", 1, 2, message, surface_op="append"),
            make_event("turn/end", 2, 3, {"turn": 1, "reason": {"kind": "completed"}}),
        ]

    a, b = await store.create(_meta("sa")), await store.create(_meta("sb"))
    for k in range(3):
        await a.append(turn("A")[k : k + 1])
        await b.append(turn("B")[k : k + 1])
    await a.close()
    await b.close()
    assert await _read(store, "sa") == turn("A")
    assert await _read(store, "sb") == turn("B")
    await store.aclose()


def _chunk_run_log(mk: Any) -> list[SessionEvent]:
    """The harness's ``chunkRunLog()``: a step streaming a five-member text-delta run."""
    message: dict[str, Any] = {
        "turn": 1,
        "step": 1,
        "content": [{"type": "text", "text": "t0t1t2t3t4"}],
        "provenance": {"provider": "mock", "model": "mock"},
    }
    return [
        make_event("turn/start", 0, 1, {"turn": 1}),
        make_event("step/start", 1, 2, {"turn": 1, "step": 1}),
        *mk.text_chunks(2, 5),
        make_event(
            "assistant/message",
            7,
            8,
            message,
            surface_op="append",
            source_event_seqs=[2, 3, 4, 5, 6],
        ),
        make_event("step/end", 8, 9, {"turn": 1, "step": 1}),
        make_event("turn/end", 9, 10, {"turn": 1, "reason": {"kind": "completed"}}),
    ]


def _tags(path: Path) -> list[str]:
    return [json.loads(line)["type"] for line in path.read_bytes().split(b"\n")[1:-1]]


async def test_a_delta_run_is_one_text_chunks_row_when_packing_and_one_line_each_when_not(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "writes a delta run as one text-chunks row by default and loads back
    identical events" and "packChunks: false writes one event per line and still loads
    identical events". Differs: our default is ``pack_chunks=False``; packing is chosen."""
    log = _chunk_run_log(mk)
    for pack, tags in (
        (
            True,
            [
                "turn/start",
                "step/start",
                "text-chunks",
                "assistant/message",
                "step/end",
                "turn/end",
            ],
        ),
        (False, [e.type for e in log]),
    ):
        store = JsonlPersistence(tmp_path / str(pack), pack_chunks=pack)
        async with await store.create(_meta("packed", "/work")) as writer:
            await writer.append(log)
        assert _tags(store.log_path(_meta("packed", "/work"))) == tags
        assert await _read(JsonlPersistence(tmp_path / str(pack)), "packed") == log
        await store.aclose()


async def test_a_mixed_file_of_verbatim_lines_then_packed_appends_loads(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "loads a mixed file: verbatim lines from an unpacked writer, then packed
    appends"."""
    log = _chunk_run_log(mk)
    store = JsonlPersistence(tmp_path, pack_chunks=True)
    header = _meta("mixed", "/work")
    path = _put(store, header, _plain([encode_header_line(header), *map(encode_event, log)]))
    second = [
        make_event(
            e.type,
            10 + e.seq,
            e.time,
            {**cast(dict[str, Any], e.to_wire()["data"]), "turn": 2},
            surface_op=e.to_wire().get("surfaceOp"),
            source_event_seqs=[10 + s for s in e.to_wire().get("sourceEventSeqs", [])] or None,
        )
        for e in log
    ]
    async with await store.open("mixed", "write") as writer:
        assert list(await writer.read()) == log
        await writer.append(second)
    assert await _read(JsonlPersistence(tmp_path), "mixed") == [*log, *second]
    tags = _tags(path)
    assert (tags.count("text-chunks"), tags.count("assistant/chunk")) == (1, 5)
    await store.aclose()


# -- jsonl.spec.ts and zstd.spec.ts: revisions, export, ids on disk -------------------------


async def test_a_revision_is_the_same_on_reopen_and_differs_for_a_copy_in_another_root(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "source-qualifies revisions across roots while preserving same-log
    reopen identity": the same bytes in another root are another artifact."""
    revisions = []
    for name in ("root", "other"):
        store = JsonlPersistence(tmp_path / name)
        async with await store.create(_meta("revision-source")) as writer:
            await writer.append(mk.one_turn())
        snapshot = await JsonlPersistence(tmp_path / name).stat("revision-source")
        assert snapshot is not None
        assert [s.revision for s in await store.list()] == [snapshot.revision]
        revisions.append(snapshot.revision)
        await store.aclose()
    assert revisions[0] != revisions[1]


@pytest.mark.parametrize("compression", ["none", "zstd"])
async def test_export_is_the_plain_jsonl_text_whatever_the_encoding(
    tmp_path: Path, mk: Any, compression: str
) -> None:
    """zstd.spec.ts: "readRaw decodes the compressed artifact back to the original JSONL text"
    (and jsonl.spec.ts's plain counterpart): the header line, then one line per event."""
    store = JsonlPersistence(tmp_path / "root", compression=compression)  # type: ignore[arg-type]
    header = _meta("raw-read", "/work")
    async with await store.create(header) as writer:
        await writer.append(mk.one_turn())
    out = tmp_path / "out.jsonl"
    assert await export_session(store, "raw-read", out) == 6
    assert out.read_bytes() == _plain(
        [encode_header_line(header), *map(encode_event, mk.one_turn())]
    )
    await store.aclose()


@pytest.mark.parametrize(
    ("compression", "data", "reason"),
    [
        ("none", b'not a header line\n{"type":"turn/start","seq":0}\n', "not JSON"),
        ("zstd", b"", "no complete zstd frame"),
    ],
)
async def test_export_refuses_an_absent_session_and_a_corrupt_header(
    tmp_path: Path, compression: str, data: bytes, reason: str
) -> None:
    """jsonl.spec.ts: "readRaw is undefined for an absent session" (ours: not found) and
    "readRaw rejects a corrupt header line instead of exporting it"; zstd.spec.ts: "readRaw
    rejects a present zstd artifact that carries no frame"."""
    store = JsonlPersistence(tmp_path / "root", compression=compression)  # type: ignore[arg-type]
    with pytest.raises(SessionPersistenceNotFoundError):
        await export_session(store, "raw-missing", tmp_path / "missing.jsonl")
    _put(store, _meta("raw-corrupt", "/work"), data)
    with pytest.raises(SessionPersistenceCorruptionError, match=reason):
        await export_session(store, "raw-corrupt", tmp_path / "corrupt.jsonl")
    await store.aclose()


async def test_create_refuses_an_id_stored_under_another_project_directory(
    tmp_path: Path, mk: Any
) -> None:
    """jsonl.spec.ts: "createCore rejects an id already on disk under a different project
    directory" (a fresh instance, so nothing in memory knows the id)."""
    store = JsonlPersistence(tmp_path)
    async with await store.create(_meta("dup-id", "/projA")) as writer:
        await writer.append(mk.one_turn())
    fresh = JsonlPersistence(tmp_path)
    with pytest.raises(SessionAlreadyExistsError):
        await fresh.create(_meta("dup-id", "/projB"))
    assert not fresh.log_path(_meta("dup-id", "/projB")).parent.exists()
    await store.aclose()
    await fresh.aclose()
