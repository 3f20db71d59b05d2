"""The pure validation helpers every backend shares."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from dsh_persistence import (
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
    assert_contiguous,
    assert_format_version,
    assert_stored_id,
    assert_writable_event,
    assert_writable_events,
    check_read_range,
    decode_stored_event,
    decode_stored_header,
    format_version_refusal,
    materialize_append_batch,
    materialize_create_header,
    refuse_reserved_type,
)
from dsh_session import (
    SessionEvent,
    SessionHeader,
    decode_event,
    decode_header_line,
    encode_event,
    make_event,
)


def _header(session_id: str = "s", **extra: object) -> SessionHeader:
    value = {"type": "session", "version": 0, "id": session_id, "createdAt": 1000, **extra}
    return decode_header_line(json.dumps(value).encode())[0]


def _event(event_type: str, seq: int, data: object, **extra: object) -> SessionEvent:
    value = {"type": event_type, "seq": seq, "time": 1, "data": data, **extra}
    return decode_event(json.dumps(value).encode())


def _turns(start: int, count: int) -> list[SessionEvent]:
    return [_event("step/start", start + i, {"turn": 1, "step": i}) for i in range(count)]


@pytest.mark.parametrize("args", [(0, None), (0, 0), (5, 3), (10**9, None)])
def test_read_range_accepts_non_negative_integers(args: tuple[int, int | None]) -> None:
    check_read_range(*args)


@pytest.mark.parametrize(
    ("args", "kind"),
    [
        ((-1, None), ValueError),
        ((0, -1), ValueError),
        ((1.5, None), TypeError),
        ((0, 2.5), TypeError),
        ((True, None), TypeError),
        (("1", None), TypeError),
    ],
)
def test_read_range_refuses_anything_else_saying_non_negative_integer(
    args: tuple[object, object], kind: type[Exception]
) -> None:
    with pytest.raises(kind, match="non-negative integer"):
        check_read_range(*args)


def test_contiguity_accepts_the_continuing_batch_and_an_empty_one() -> None:
    assert_contiguous("s", _turns(6, 2), 6)
    assert_contiguous("s", [], 6)


def test_contiguity_names_the_expected_seq_and_index() -> None:
    with pytest.raises(ValueError, match=r"expected seq 6 at index 0, got 0"):
        assert_contiguous("s", _turns(0, 2), 6)
    with pytest.raises(ValueError, match=r"expected seq 7 at index 1, got 8"):
        assert_contiguous("s", [*_turns(6, 1), *_turns(8, 1)], 6)


def test_append_batch_is_detached_from_the_callers_events() -> None:
    original = _event("mystery/event", 0, {"n": 1}, ignorable=True)
    batch = materialize_append_batch("s", [original])
    cast(dict[str, Any], original.data)["n"] = 2
    assert batch.lines == (
        b'{"type":"mystery/event","seq":0,"time":1,"data":{"n":1},"ignorable":true}',
    )
    assert encode_event(batch.events[0]) == batch.lines[0]
    assert len(batch) == 1


def test_append_batch_refuses_data_that_is_not_lossless_json() -> None:
    event = _event("mystery/event", 0, {"n": 1})
    cast(dict[str, Any], event.data)["n"] = float("nan")
    with pytest.raises(TypeError, match="index 0 is not losslessly JSON-serializable"):
        materialize_append_batch("s", [event])


@pytest.mark.parametrize("item", [{"type": "turn/start", "seq": 0}, "turn/start", None])
def test_append_batch_refuses_items_that_are_not_events(item: object) -> None:
    with pytest.raises(TypeError, match="index 0 is not a session event"):
        materialize_append_batch("s", [item])  # type: ignore[list-item]


def test_append_batch_refuses_a_non_sequence() -> None:
    with pytest.raises(TypeError, match="sequence of events"):
        materialize_append_batch("s", "not events")  # type: ignore[arg-type]


def test_create_header_accepts_plain_and_seeded_headers_with_matching_counts() -> None:
    assert materialize_create_header(_header()) == _header()
    seeded = _header(seedLength=3)
    assert materialize_create_header(seeded, 3) is seeded


@pytest.mark.parametrize(
    ("header", "count", "match"),
    [
        (_header(seedLength=3), 0, "needs inherited_event_count >= 1"),
        (_header(), 2, "needs a seeded header"),
        (_header(), -1, "non-negative integer"),
    ],
)
def test_create_header_enforces_is_seeded_iff_inherited_count(
    header: SessionHeader, count: int, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        materialize_create_header(header, count)


def test_create_header_refuses_a_non_header() -> None:
    with pytest.raises(TypeError, match="SessionHeader"):
        materialize_create_header({"id": "s"})  # type: ignore[arg-type]


def test_stored_header_newer_version_says_upgrade_before_any_shape_check() -> None:
    line = b'{"type":"session","version":5,"shape":"anything at all"}'  # v1-v4 are read
    with pytest.raises(SessionFormatUnsupportedError, match="upgrade") as caught:
        decode_stored_header("s", line, artifact="/r/s.jsonl")
    assert caught.value.version == 5
    assert caught.value.artifact == "/r/s.jsonl"


def test_stored_header_malformed_is_corruption_at_line_1() -> None:
    with pytest.raises(SessionPersistenceCorruptionError) as caught:
        decode_stored_header("s", b'{"type":"session","version":0}', artifact="/r/s.jsonl")
    assert (caught.value.artifact, caught.value.line) == ("/r/s.jsonl", 1)


def test_stored_header_of_another_session_is_corruption() -> None:
    line = b'{"type":"session","version":0,"id":"other","createdAt":1}'
    with pytest.raises(SessionPersistenceCorruptionError, match="'other'"):
        decode_stored_header("s", line, artifact="/r/s.jsonl")
    with pytest.raises(SessionPersistenceCorruptionError):
        assert_stored_id("s", _header("other"))


def test_stored_header_returns_header_and_inherited_count() -> None:
    line = b'{"type":"session","version":0,"id":"s","createdAt":1,"seedLength":4}'
    header, inherited = decode_stored_header("s", line)
    assert (header.id, header.is_seeded, inherited) == ("s", True, 4)


def test_version_refusal_is_direction_aware() -> None:
    assert "newer harness" in str(format_version_refusal("s", 1))
    assert "no upgrade path" in str(format_version_refusal("s", -1))
    assert "not a version" in str(format_version_refusal("s", "zero"))
    assert_format_version("s", 0)
    with pytest.raises(SessionFormatUnsupportedError):
        assert_format_version("s", True)


def test_write_open_vocabulary_refuses_unknown_types_not_marked_ignorable() -> None:
    with pytest.raises(SessionFormatUnsupportedError, match="'mystery/event'") as caught:
        assert_writable_events("s", [_event("mystery/event", 0, {})], artifact="/r/s.jsonl")
    assert caught.value.event_type == "mystery/event"
    assert "upgrade" in str(caught.value)


def test_write_open_vocabulary_accepts_known_plugin_and_ignorable_types() -> None:
    assert_writable_event("s", _event("permission/preset", 0, {"preset": "ask"}))
    assert_writable_event("s", _event("step/start", 0, {"turn": 1, "step": 1}))
    assert_writable_event("s", _event("mystery/event", 0, {}, ignorable=True))


@pytest.mark.parametrize("row_type", ["text-chunks", "reasoning-chunks", "tool-call-chunks"])
def test_a_packed_row_name_is_refused_as_an_event_type(row_type: str) -> None:
    event = make_event(row_type, 0, 1000, {"x": 1}, ignorable=True)
    with pytest.raises(ValueError, match="reserved for packed chunk rows"):
        materialize_append_batch("s-1", [event])
    refuse_reserved_type("s-1", 0, "text-delta")  # a chunk type itself is an ordinary name


def test_encode_append_batch_is_the_canonical_lines_detached_from_the_caller() -> None:
    from dsh_persistence import encode_append_batch
    from dsh_session import encode_event, make_event

    data = {"content": [{"type": "text", "text": "é"}], "source": {"kind": "user"}}
    event = make_event("user/message", 0, 1, data, surface_op="append")
    (line,) = encode_append_batch("s", [event])
    assert line == encode_event(event)
    data["content"][0]["text"] = "changed"  # the stored copy is already bytes
    assert b"changed" not in line


@pytest.mark.parametrize(
    ("batch", "error", "said"),
    [
        ("not a batch", TypeError, "append takes a sequence of events, got str"),
        (
            [{"type": "turn/start"}],
            TypeError,
            "session 's': item at index 0 is not a session event",
        ),
    ],
)
def test_encode_append_batch_refuses_what_is_not_events_naming_the_index(
    batch: object, error: type[Exception], said: str
) -> None:
    from dsh_persistence import encode_append_batch

    with pytest.raises(error, match=said):
        encode_append_batch("s", batch)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "record",
    [
        b"[1,2]",
        b"null",
        b'"turn/start"',
        b"not json",
        b'{"type":["turn/start"],"seq":3,"time":1,"data":{}}',
        b'{"type":{"a":1},"seq":3,"time":1,"data":{}}',
        b'{"type":"mystery/x","seq":"3","time":1,"data":{}}',
        b'{"type":"mystery/x","time":1,"data":{}}',
        b'{"type":"mystery/x","seq":3,"time":"now","data":{}}',
        b'{"type":"mystery/x","seq":4,"time":1,"data":{}}',
        b'{"type":"text-chunks","seq":3,"time":1,"data":{}}',
    ],
)
def test_a_stored_record_that_is_no_event_is_corruption_naming_session_and_seq(
    record: bytes,
) -> None:
    with pytest.raises(SessionPersistenceCorruptionError, match="seq 3") as info:
        decode_stored_event("s-1", record, 3, artifact="db")
    assert (info.value.session_id, info.value.row, info.value.artifact) == ("s-1", 3, "db")
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        decode_stored_event("s-1", record, 3, artifact="log.jsonl", line=5)
    assert (info.value.line, info.value.row) == (5, None)


def test_a_stored_record_of_its_seq_decodes() -> None:
    line = encode_event(_event("mystery/x", 3, {"k": 1}))
    assert encode_event(decode_stored_event("s-1", line, 3)) == line
