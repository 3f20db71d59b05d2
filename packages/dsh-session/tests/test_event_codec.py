"""The event line codec: typed core events, opaque plugin/unknown events, byte-exact round trip."""

from __future__ import annotations

import pickle
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_session import (
    ROW_TYPES,
    AssistantMessageEvent,
    EventDecodeError,
    LosslessJsonError,
    OpaqueEvent,
    SessionEvent,
    StepStartEvent,
    SurfaceReplace,
    ToolResultEvent,
    UserMessageEvent,
    check_event,
    decode_event,
    encode_event,
    encode_stored_event,
    is_known_event_type,
    make_event,
)

EVENT_CLASS_OF = {
    "turn/start": "TurnStartEvent",
    "turn/end": "TurnEndEvent",
    "step/start": "StepStartEvent",
    "step/end": "StepEndEvent",
    "user/message": "UserMessageEvent",
    "assistant/chunk": "AssistantChunkEvent",
    "assistant/message": "AssistantMessageEvent",
    "tool/call": "ToolCallEvent",
    "tool/result": "ToolResultEvent",
    "request/header": "RequestHeaderEvent",
    "request/context": "RequestContextEvent",
    "session/title": "SessionTitleEvent",
}


def _event_lines(lines: list[bytes]) -> list[bytes]:
    return [line for line in lines[1:] if decode_type(line) not in ROW_TYPES]


def decode_type(line: bytes) -> str:
    return line.split(b'"type":"', 1)[1].split(b'"', 1)[0].decode()


def test_every_fixture_event_line_re_encodes_to_the_same_bytes(
    fixture_log_lines: list[bytes],
) -> None:
    for line in _event_lines(fixture_log_lines):
        assert encode_event(decode_event(line)) == line


def test_fixture_core_events_decode_to_their_typed_class(fixture_log_lines: list[bytes]) -> None:
    for line in _event_lines(fixture_log_lines):
        event = decode_event(line)
        expected = EVENT_CLASS_OF.get(event.type, "OpaqueEvent")
        assert type(event).__name__ == expected


def test_both_written_shapes_of_assistant_message_are_typed() -> None:
    flat = decode_event(
        b'{"type":"assistant/message","seq":5,"time":1,"data":{"turn":1,"step":1,'
        b'"content":[{"type":"text","text":"hi"}],"provenance":{"provider":"p","model":"m"},'
        b'"usage":{"inputTokens":1}},"sourceEventSeqs":[1,2],"surfaceOp":"append"}'
    )
    nested = decode_event(
        b'{"type":"assistant/message","seq":5,"time":1,"data":{"turn":1,"step":1,'
        b'"message":{"role":"assistant","content":[]},"usage":{}},"surfaceOp":"append"}'
    )
    assert isinstance(flat, AssistantMessageEvent)
    assert isinstance(nested, AssistantMessageEvent)
    assert flat.data["turn"] == 1
    assert flat.source_event_seqs == (1, 2)
    assert nested.data["message"]["role"] == "assistant"


def test_event_attributes_read_the_envelope() -> None:
    event = decode_event(
        b'{"type":"tool/result","seq":9,"time":7,"data":{"turn":1,"step":2,"callId":"c",'
        b'"content":[],"isError":false},"ignorable":true,"sourceEventSeqs":[8],'
        b'"surfaceOp":{"op":"replace","start":3,"end":4}}'
    )
    assert isinstance(event, ToolResultEvent)
    assert (event.type, event.seq, event.time) == ("tool/result", 9, 7)
    assert event.ignorable is True
    assert event.source_event_seqs == (8,)
    assert event.surface_op == SurfaceReplace(3, 4)
    assert event.data["callId"] == "c"


def test_events_are_immutable() -> None:
    event = decode_event(b'{"type":"step/start","seq":0,"time":1,"data":{"turn":1,"step":1}}')
    with pytest.raises(AttributeError, match="immutable"):
        event.seq = 3  # type: ignore[misc]


def test_events_compare_by_class_and_content_and_pickle() -> None:
    line = b'{"type":"step/start","seq":0,"time":1,"data":{"turn":1,"step":1}}'
    event = decode_event(line)
    assert event == decode_event(line)
    assert event != decode_event(line.replace(b'"time":1', b'"time":2'))
    assert pickle.loads(pickle.dumps(event)) == event
    assert isinstance(event, StepStartEvent)


def test_plugin_types_are_known_and_kept_opaque() -> None:
    line = b'{"type":"permission/preset","seq":0,"time":1,"data":{"preset":"workspace-write"}}'
    event = decode_event(line)
    assert isinstance(event, OpaqueEvent)
    assert is_known_event_type("permission/preset")
    assert encode_event(event) == line


def test_unknown_types_are_opaque_and_round_trip_byte_for_byte() -> None:
    line = b'{"type":"future/thing","seq":3,"time":1,"data":[1,"x",{"b":2,"a":1}],"ignorable":true}'
    event = decode_event(line)
    assert isinstance(event, OpaqueEvent)
    assert not is_known_event_type("future/thing")
    assert event.data == [1, "x", {"b": 2, "a": 1}]
    assert encode_event(event) == line


def test_extra_data_keys_of_a_core_event_are_kept_in_order() -> None:
    line = (
        b'{"type":"session/end-seed","seq":4,"time":1,"data":{"inherited":true}}',
        b'{"type":"step/start","seq":0,"time":1,"data":{"turn":1,"step":1,"z":0,"a":[]}}',
    )
    for item in line:
        assert encode_event(decode_event(item)) == item


def test_a_line_with_a_lone_surrogate_escape_decodes_and_round_trips() -> None:
    line = (
        b'{"type":"user/message","seq":0,"time":1,"data":{"content":'
        b'[{"type":"text","text":"a\\ud800"}],"source":{"kind":"user"}},"surfaceOp":"append"}'
    )
    event = decode_event(line)
    assert isinstance(event, UserMessageEvent)
    assert event.data["content"][0]["text"] == "a\ud800"
    assert encode_event(event) == line


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"{not json", "not JSON"),
        (b'{"type":"x","seq":0,"time":1,"data":NaN}', "not JSON"),
        (b"[1,2]", "JSON object"),
        (b'{"seq":0,"time":1,"data":{}}', "type"),
        (b'{"type":7,"seq":0,"time":1,"data":{}}', "type"),
        (b'{"type":"x","seq":-1,"time":1,"data":{}}', "seq"),
        (b'{"type":"x","seq":1.0,"time":1,"data":{}}', "seq"),
        (b'{"type":"x","seq":true,"time":1,"data":{}}', "seq"),
        (b'{"type":"x","seq":9007199254740992,"time":1,"data":{}}', "seq"),
        (b'{"type":"x","seq":0,"time":"1","data":{}}', "time"),
        (b'{"type":"x","seq":0,"time":1}', "data is missing"),
        (b'{"type":"x","seq":0,"time":1,"data":{},"extra":1}', "unexpected envelope"),
        (b'{"type":"x","seq":0,"time":1,"data":{},"ignorable":"yes"}', "ignorable"),
        (b'{"type":"step/start","seq":0,"time":1,"data":{"turn":1}}', "data.step is missing"),
        (b'{"type":"step/start","seq":0,"time":1,"data":{"turn":"1","step":1}}', "data.turn"),
        (b'{"type":"step/start","seq":0,"time":1,"data":[]}', "data must be an object"),
        (
            b'{"type":"step/start","seq":0,"time":1,"data":{"turn":1,"step":1},'
            b'"surfaceOp":"append"}',
            "unexpected envelope",
        ),
        (
            b'{"type":"user/message","seq":0,"time":1,"data":{"content":[]}}',
            "must carry surfaceOp",
        ),
        (
            b'{"type":"user/message","seq":0,"time":1,"data":{"content":[]},'
            b'"surfaceOp":{"op":"replace","start":0}}',
            "surfaceOp",
        ),
        (
            b'{"type":"user/message","seq":0,"time":1,"data":{"content":[]},'
            b'"surfaceOp":"append","sourceEventSeqs":3}',
            "sourceEventSeqs",
        ),
        (
            b'{"type":"tool/call","seq":0,"time":1,"data":{"turn":1,"step":1,"callId":"c",'
            b'"name":"n","arguments":{}}}',
            "data.arguments",
        ),
    ],
)
def test_malformed_lines_raise_event_decode_error_with_the_reason(line: bytes, reason: str) -> None:
    with pytest.raises(EventDecodeError, match=reason):
        decode_event(line)


def test_make_event_builds_the_typed_class_and_snapshots_data() -> None:
    content = [{"type": "text", "text": "hi"}]
    event = make_event(
        "user/message", 0, 5, {"content": content, "source": {"kind": "user"}}, surface_op="append"
    )
    content.append({"type": "text", "text": "later"})
    assert isinstance(event, UserMessageEvent)
    assert len(event.data["content"]) == 1
    assert encode_event(event) == (
        b'{"type":"user/message","seq":0,"time":5,"data":{"content":[{"type":"text","text":"hi"}],'
        b'"source":{"kind":"user"}},"surfaceOp":"append"}'
    )


def test_check_event_accepts_a_decoded_event_and_refuses_one_whose_shape_was_mutated() -> None:
    event = make_event("step/start", 3, 5, {"turn": 1, "step": 1})
    check_event(event)
    data = cast(dict[str, Any], event.data)
    data["turn"] = "one"
    with pytest.raises(EventDecodeError, match=r"step/start: data\.turn must be an integer"):
        check_event(event)
    del data["turn"]
    with pytest.raises(EventDecodeError, match=r"data\.turn is missing"):
        check_event(event)


def test_make_event_writes_envelope_keys_in_wire_order() -> None:
    event = make_event(
        "tool/result",
        4,
        5,
        {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": False},
        ignorable=True,
        source_event_seqs=(2,),
        surface_op=SurfaceReplace(1, 1),
    )
    assert encode_event(event).startswith(b'{"type":"tool/result","seq":4,"time":5,"data":')
    assert encode_event(event).endswith(
        b'"ignorable":true,"sourceEventSeqs":[2],"surfaceOp":{"op":"replace","start":1,"end":1}}'
    )


def test_make_event_refuses_data_that_is_not_lossless_json() -> None:
    with pytest.raises(LosslessJsonError):
        make_event("x/y", 0, 1, {"v": float("nan")})
    with pytest.raises(EventDecodeError):
        make_event("step/start", 0, 1, {"turn": 1})


def test_encode_refuses_negative_zero_read_from_a_foreign_line() -> None:
    event = decode_event(b'{"type":"x/y","seq":0,"time":1,"data":-0.0}')
    with pytest.raises(LosslessJsonError):
        encode_event(event)


_text = st.text(max_size=8)
_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != 0 or str(f) == "0.0")
    | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=10,
)
_turn = st.integers(0, 1000)


@st.composite
def events(draw: st.DrawFn) -> SessionEvent:
    kind = draw(st.sampled_from(["step/start", "user/message", "tool/call", "opaque"]))
    seq = draw(st.integers(0, 2**53 - 1))
    time = draw(st.integers(-(2**53) + 1, 2**53 - 1))
    extra = draw(st.dictionaries(st.sampled_from(["x", "zz", "meta2"]), _values, max_size=2))
    if kind == "step/start":
        return make_event(kind, seq, time, {"turn": draw(_turn), "step": draw(_turn), **extra})
    if kind == "user/message":
        content = draw(st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": _text})))
        return make_event(
            kind,
            seq,
            time,
            {"content": content, "source": {"kind": "user"}, **extra},
            surface_op=draw(st.sampled_from(["append", SurfaceReplace(0, 0)])),
            source_event_seqs=draw(st.none() | st.lists(st.integers(0, 99), max_size=3)),
        )
    if kind == "tool/call":
        return make_event(
            kind,
            seq,
            time,
            {"turn": 1, "step": 1, "callId": draw(_text), "name": "bash", "arguments": "{}"},
        )
    return make_event(
        draw(st.sampled_from(["todo/write", "future/x"])),
        seq,
        time,
        draw(_values),
        ignorable=draw(st.none() | st.booleans()),
    )


@given(events())
def test_any_event_survives_encode_then_decode(event: SessionEvent) -> None:
    line = encode_event(event)
    again = decode_event(line)
    assert again == event
    assert encode_event(again) == line


def test_a_stored_integer_with_no_exact_double_is_written_back_as_json_parse_reads_it() -> None:
    line = (
        b'{"type":"x/y","seq":0,"time":1,"data":{"n":11111111111111111111111111,"m":[1,2],"big":1'
        + b"0" * 400
        + b"}}"
    )
    event = decode_event(line)
    assert event.data["n"] == 11111111111111111111111111  # a read keeps what Python parsed
    with pytest.raises(LosslessJsonError):
        encode_event(event)  # new data holding it stays refused
    # node: JSON.stringify(JSON.parse(...)) gives 1.111111111111111e+25, and null for Infinity
    assert encode_stored_event(event) == (
        b'{"type":"x/y","seq":0,"time":1,"data":{"n":1.111111111111111e+25,"m":[1,2],"big":null}}'
    )
    ordinary = decode_event(b'{"type":"x/y","seq":0,"time":1,"data":{"n":9007199254740993.5}}')
    assert encode_stored_event(ordinary) == encode_event(ordinary)
