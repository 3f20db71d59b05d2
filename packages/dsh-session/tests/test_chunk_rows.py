"""Chunk packing (reference §1.10): packed rows read and written exactly as the fixtures show."""

from __future__ import annotations

import pytest

from dsh_session import (
    AssistantChunkEvent,
    ChunkRowError,
    EventDecodeError,
    SessionEvent,
    decode_row,
    decode_rows,
    encode_event,
    encode_rows,
    make_event,
    row_last_seq,
)


def _expanded(lines: list[bytes]) -> list[SessionEvent]:
    return [event for line in lines[1:] for event in decode_row(line)]


def test_packed_fixture_rows_expand_to_contiguous_seqs(fixture_log_lines: list[bytes]) -> None:
    events = _expanded(fixture_log_lines)
    assert [event.seq for event in events] == list(range(len(events)))


def test_decode_rows_gives_what_decode_row_gives_line_by_line(
    fixture_log_lines: list[bytes],
) -> None:
    body = fixture_log_lines[1:]
    events, done = decode_rows(body, 0)
    assert done == len(body)
    assert events == _expanded(fixture_log_lines)
    assert [type(e) for e in events] == [type(e) for e in _expanded(fixture_log_lines)]


def test_decode_rows_stops_before_a_bad_line_or_a_seq_gap() -> None:
    lines = [
        encode_event(make_event("step/start", seq, 1, {"turn": 1, "step": 1})) for seq in (0, 1)
    ]
    lone = b'{"type":"mystery","seq":2,"time":1,"data":"\\ud800"}'  # slow parse, opaque type
    assert decode_rows([*lines, lone], 0)[1] == 3
    assert decode_rows([*lines, b'{"type":"step/start"'], 0)[1] == 2
    assert decode_rows([*lines, lines[0]], 0)[1] == 2  # seq 0 again
    events, done = decode_rows(lines, 5)
    assert (events, done) == ([], 0)


def test_each_fixture_row_re_packs_to_the_same_bytes(fixture_log_lines: list[bytes]) -> None:
    for line in fixture_log_lines[1:]:
        assert encode_rows(decode_row(line), pack_chunks=True) == [line]


def test_a_whole_fixture_re_packs_to_its_exact_lines(fixture_log_lines: list[bytes]) -> None:
    events = _expanded(fixture_log_lines)
    assert encode_rows(events, pack_chunks=True) == fixture_log_lines[1:]


def test_without_pack_chunks_every_event_is_its_own_line(fixture_log_lines: list[bytes]) -> None:
    events = _expanded(fixture_log_lines)
    assert encode_rows(events, pack_chunks=False) == [encode_event(e) for e in events]


def test_row_last_seq_is_the_last_member_seq(fixture_log_lines: list[bytes]) -> None:
    for line in fixture_log_lines[1:]:
        assert row_last_seq(line) == decode_row(line)[-1].seq


def test_member_times_follow_time0_and_dt_which_may_be_negative() -> None:
    row = (
        b'{"type":"text-chunks","seq0":10,"time0":100,"data":{"turn":1,"step":2,"index":0,'
        b'"dt":[5,-3],"texts":["a","b","c"]}}'
    )
    events = decode_row(row)
    assert [(e.seq, e.time) for e in events] == [(10, 100), (11, 105), (12, 102)]
    assert all(isinstance(e, AssistantChunkEvent) for e in events)
    assert events[1].data["chunk"] == {"type": "text-delta", "index": 0, "text": "b"}
    assert encode_rows(events, pack_chunks=True) == [row]


def _chunk(seq: int, time: int, text: str, *, index: int = 0) -> SessionEvent:
    return make_event(
        "assistant/chunk",
        seq,
        time,
        {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": index, "text": text}},
    )


def test_runs_shorter_than_three_are_written_verbatim() -> None:
    events = [_chunk(0, 1, "a"), _chunk(1, 2, "b")]
    assert encode_rows(events, pack_chunks=True) == [encode_event(e) for e in events]


def test_a_run_breaks_on_a_different_block_index_or_a_seq_gap() -> None:
    events = [_chunk(0, 1, "a"), _chunk(1, 1, "b"), _chunk(2, 1, "c", index=1), _chunk(4, 1, "d")]
    assert len(encode_rows(events, pack_chunks=True)) == 4


def test_a_run_split_across_batches_stays_split() -> None:
    events = [_chunk(i, i, str(i)) for i in range(6)]
    first = encode_rows(events[:2], pack_chunks=True)
    second = encode_rows(events[2:], pack_chunks=True)
    assert len(first) == 2
    assert len(second) == 1
    assert [e for line in first + second for e in decode_row(line)] == events


def test_ignorable_or_reordered_chunks_are_not_packed() -> None:
    plain = [_chunk(i, i, "x") for i in range(3)]
    marked = [
        make_event("assistant/chunk", e.seq, e.time, e.data, ignorable=True)  # type: ignore[arg-type]
        for e in plain
    ]
    assert len(encode_rows(marked, pack_chunks=True)) == 3
    reordered = [
        make_event(
            "assistant/chunk",
            i,
            i,
            {"turn": 1, "step": 1, "chunk": {"index": 0, "type": "text-delta", "text": "x"}},
        )
        for i in range(3)
    ]
    assert len(encode_rows(reordered, pack_chunks=True)) == 3


def test_tool_call_rows_keep_id_and_optional_name() -> None:
    def call(seq: int, name: bool) -> SessionEvent:
        chunk = {"type": "tool-call-delta", "index": 2, "id": "c1"}
        if name:
            chunk["name"] = "bash"
        chunk["argumentsDelta"] = "{"
        return make_event("assistant/chunk", seq, 0, {"turn": 1, "step": 1, "chunk": chunk})

    named = [call(i, True) for i in range(3)]
    unnamed = [call(i, False) for i in range(3)]
    (row_named,) = encode_rows(named, pack_chunks=True)
    (row_unnamed,) = encode_rows(unnamed, pack_chunks=True)
    assert b'"name":"bash"' in row_named
    assert b'"name"' not in row_unnamed
    assert decode_row(row_named) == named
    assert decode_row(row_unnamed) == unnamed
    assert len(encode_rows(named[:2] + unnamed[2:], pack_chunks=True)) == 3


@pytest.mark.parametrize(
    "row",
    [
        b'{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,'
        b'"dt":[1],"texts":["a","b","c"]}}',
        b'{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,'
        b'"dt":[],"texts":[]}}',
        b'{"type":"text-chunks","seq0":-1,"time0":0,"data":{"turn":1,"step":1,"index":0,'
        b'"dt":[],"texts":["a"]}}',
        b'{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,'
        b'"dt":[],"texts":[1]}}',
        b'{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,'
        b'"dt":[],"texts":["a"],"x":1}}',
        b'{"type":"text-chunks","seq0":0,"time0":0,"extra":1,"data":{"turn":1,"step":1,'
        b'"index":0,"dt":[],"texts":["a"]}}',
        b'{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,'
        b'"dt":[],"args":["a"]}}',
        b'{"type":"reasoning-chunks","seq0":0,"time0":9007199254740991,"data":{"turn":1,'
        b'"step":1,"index":0,"dt":[1],"texts":["a","b"]}}',
    ],
)
def test_malformed_rows_raise_chunk_row_error(row: bytes) -> None:
    with pytest.raises(ChunkRowError, match="malformed"):
        decode_row(row)


def test_a_malformed_event_line_raises_event_decode_error() -> None:
    with pytest.raises(EventDecodeError):
        decode_row(b'{"type":"step/start","seq":0,"time":1,"data":{}}')
    with pytest.raises(EventDecodeError):
        row_last_seq(b'{"type":"step/start","seq":"0"}')


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":["step/start"],"seq":0,"time":1,"data":{}}',
        b'{"type":{"a":1},"seq":0,"time":1,"data":{}}',
        b'{"type":5,"seq":0,"time":1,"data":{}}',
    ],
    ids=["list", "object", "number"],
)
def test_a_type_that_is_not_a_string_is_a_decode_error_never_a_type_error(line: bytes) -> None:
    with pytest.raises(EventDecodeError, match="type must be a string"):
        decode_row(line)
    assert decode_rows([line], 0) == ([], 0)  # the bulk path stops before it, for the caller


def test_row_last_seq_refuses_a_row_without_members() -> None:
    with pytest.raises(ChunkRowError):
        row_last_seq(b'{"type":"text-chunks","seq0":4,"time0":0,"data":{"texts":[]}}')


def test_decode_row_accepts_row_data_keys_in_any_order() -> None:
    row = (
        b'{"type":"tool-call-chunks","time0":5,"seq0":2,"data":{"args":["a","b"],"id":"c",'
        b'"dt":[1],"index":0,"step":1,"turn":1}}'
    )
    events = decode_row(row)
    assert [(e.seq, e.time) for e in events] == [(2, 5), (3, 6)]
    assert events[0].data["chunk"] == {
        "type": "tool-call-delta",
        "index": 0,
        "id": "c",
        "argumentsDelta": "a",
    }
