"""Issue 35 §4: real logs of the harness's later generations (``fixtures/upstream-generations``,
see its README) decode, become a ``Session``, derive, and re-encode to their stored bytes; each
generation's own rules refuse what they refuse, with typed errors naming the seq."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh_llm import AssistantMessage, OtherSource, TextBlock, ToolResultMessage, UserMessage
from dsh_session import (
    GENERATION_EVENT_TYPES,
    HeaderDecodeError,
    Session,
    SessionEvent,
    SessionHeader,
    SessionValidationError,
    UnsupportedFormatVersionError,
    decode_event,
    decode_header_line,
    encode_header_line,
    encode_stored_event,
    fold_surface,
    generation_surface_types,
    is_append_surface_event,
)

CORPUS = Path(__file__).parent / "fixtures" / "upstream-generations"
LOGS = sorted(CORPUS.glob("*.jsonl"))


def _generation(path: Path) -> int:
    return int(path.name.rsplit(".v", 1)[1].split(".")[0])


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes()[:-1].split(b"\n")


def _load(path: Path) -> tuple[Session, list[SessionEvent]]:
    lines = _lines(path)
    header, cut = decode_header_line(lines[0])
    assert cut == 0  # a v2+ header has no seedLength: the cut is in the body
    events = [decode_event(line) for line in lines[1:]]
    return Session(header, events), events


def _named(stem: str) -> Path:
    (path,) = [p for p in LOGS if p.name.startswith(stem)]
    return path


def _restore(path: Path, edit: Any) -> Session:
    """A corpus log with ``edit(wire_rows)`` applied to its parsed rows (a bad input)."""
    lines = _lines(path)
    header, _ = decode_header_line(lines[0])
    rows = [json.loads(line) for line in lines[1:]]
    edit(rows)
    return Session(header, [decode_event(json.dumps(row)) for row in rows])


def test_the_corpus_holds_each_generation() -> None:
    counts = {g: sum(1 for p in LOGS if _generation(p) == g) for g in (2, 3, 4)}
    assert counts == {2: 3, 3: 2, 4: 6}


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_every_log_decodes_derives_and_encodes_back_to_its_bytes(path: Path) -> None:
    session, events = _load(path)
    assert session.generation == session.header.version == _generation(path)
    assert session.next_seq == len(events)
    messages = session.derive_messages()
    assert messages
    assert any(isinstance(m, AssistantMessage) for m in messages)
    assert session.system_prompt == "You are a coding agent."
    assert session.title
    lines = _lines(path)
    assert encode_header_line(session.header, session.inherited_event_count) == lines[0]
    assert [encode_stored_event(e) for e in events] == lines[1:]
    assert {e.type for e in events} <= GENERATION_EVENT_TYPES[session.generation]
    fold = fold_surface(events, generation_surface_types(session.generation))
    assert fold.nodes == session.surface


def test_a_seeded_v2_child_takes_its_cut_from_the_end_seed_marker() -> None:
    session, events = _load(_named("sdk--subagent-fork-in-process--session.1.v2"))
    assert session.header.is_seeded
    assert session.inherited_event_count == 15
    assert events[15].type == "session/end-seed"
    assert events[15].to_wire()["data"] == {"inherited": True}
    again = Session(session.header, events, inherited_event_count=15)  # an agreeing count
    assert again.inherited_event_count == 15
    with pytest.raises(SessionValidationError, match="disagrees") as raised:
        Session(session.header, events, inherited_event_count=14)
    assert raised.value.code == "HEADER"


def test_a_v4_tool_result_derives_as_a_tool_result_answering_its_call() -> None:
    session, events = _load(_named("sdk--tool-error-details"))
    results = [m for m in session.derive_messages() if isinstance(m, ToolResultMessage)]
    stored = [e.to_wire()["data"]["message"] for e in events if e.type == "tool/result"]
    assert [r.source.call_id for r in results] == [m["toolCallId"] for m in stored]
    assert [r.result.is_error for r in results] == [m.get("isError", False) for m in stored]
    assert any(r.result.is_error for r in results)
    assert all(m["role"] == "tool" for m in stored)  # the events stay as stored


def test_v4_producer_sources_derive_as_sources_of_their_kind() -> None:
    session, _ = _load(_named("sdk--tool-error-details"))
    kinds = {
        m.source.kind
        for m in session.derive_messages()
        if isinstance(m, UserMessage) and isinstance(m.source, OtherSource)
    }
    assert "runtime-context" in kinds


def test_system_and_developer_nodes_are_on_the_surface_but_not_derived() -> None:
    session, events = _load(_named("sdk--dynamic-tool-updates"))
    developer = [e.seq for e in events if e.type == "developer/message"]
    system = [e.seq for e in events if e.type == "system/message"]
    assert len(developer) == 2
    assert len(system) == 1
    assert set(developer + system) <= set(session.surface)
    assert len(session.derive_messages()) == len(session.surface) - 3
    assert events[developer[0]].to_wire()["data"]["headerSeq"] == 18
    assert session.request_header is not None
    names = [tool["name"] for tool in session.request_header.tools or []]
    assert "snapshot_ping" not in names
    assert "bash" in names


def test_a_v4_compaction_replaces_with_start_seq_and_end_seq() -> None:
    session, events = _load(_named("session--compaction-output-reserve"))
    (checkpoint,) = [
        e for e in events if e.type == "user/message" and not is_append_surface_event(e)
    ]
    assert checkpoint.to_wire()["surfaceOp"] == {"op": "replace", "startSeq": 8, "endSeq": 9}
    assert session.replace_generation == 1
    assert 8 not in session.surface
    assert 9 not in session.surface
    assert checkpoint.seq in session.surface
    derived = session.derive_messages()
    first_user = next(m for m in derived if isinstance(m, UserMessage))
    assert isinstance(first_user.source, OtherSource)
    assert first_user.source.kind == "compact-checkpoint"


def test_a_file_block_derives_as_a_text_block_naming_the_attachment() -> None:
    session, _ = _load(_named("web--file-upload-round"))
    user = next(m for m in session.derive_messages() if isinstance(m, UserMessage))
    first = user.content[0]
    assert isinstance(first, TextBlock)
    assert first.text == (
        "[attached file: poem.txt (16 bytes, "
        "sha256:29a0837077f6f3cbddd98c0605897cc6f2b4e5833fb8e1ca4a8045d89b2c8c60)]"
    )
    assert [type(b).__name__ for b in user.content] == ["TextBlock", "ImageBlock", "TextBlock"]


def test_a_later_generation_is_read_only() -> None:
    session, _ = _load(_named("sdk--text-turn--session.v3"))
    with pytest.raises(SessionValidationError, match="generation 3") as raised:
        session.append("turn/start", {"turn": 2})
    assert raised.value.code == "GENERATION"
    with pytest.raises(SessionValidationError, match="cannot fork"):
        session.fork("child")


# -- each generation's own rules ---------------------------------------------------------------


def _find(rows: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(row for row in rows if row["type"] == kind)


def test_a_v4_tool_result_in_the_v3_shape_is_refused() -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        message = _find(rows, "tool/result")["data"]["message"]
        message["role"] = "user"

    with pytest.raises(SessionValidationError, match="role 'tool'") as raised:
        _restore(_named("sdk--tool-error-details"), edit)
    assert raised.value.code == "GENERATION"
    assert raised.value.seq is not None


def test_a_v3_replacement_in_the_v0_spelling_is_refused() -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        rows[8]["surfaceOp"] = {"op": "replace", "start": 8, "end": 8}

    with pytest.raises(SessionValidationError, match="startSeq, endSeq"):
        _restore(_named("sdk--text-turn--session.v3"), edit)


def test_a_v0_log_refuses_the_later_replacement_spelling() -> None:
    header = SessionHeader(id="s", created_at=1)
    events = [
        decode_event(
            '{"type":"user/message","seq":0,"time":1,"data":{"content":[{"type":"text",'
            '"text":"a"}],"source":{"kind":"user"}},"surfaceOp":"append"}'
        ),
        decode_event(
            '{"type":"user/message","seq":1,"time":1,"data":{"content":[{"type":"text",'
            '"text":"b"}],"source":{"kind":"user"}},"sourceEventSeqs":[0],'
            '"surfaceOp":{"op":"replace","startSeq":0,"endSeq":0}}'
        ),
    ]
    with pytest.raises(SessionValidationError, match="format v0 spells") as raised:
        Session(header, events)
    assert raised.value.seq == 1


@pytest.mark.parametrize(
    ("stem", "ignorable", "refused"),
    [
        ("sdk--text-turn--session.v2", True, "not in the v2 inventory"),
        ("sdk--text-turn--session.v3", None, "not marked ignorable"),
        ("sdk--tool-error-details", None, "not marked ignorable"),
        ("sdk--text-turn--session.v3", True, None),
        ("sdk--tool-error-details", True, None),
    ],
)
def test_unknown_types_follow_each_generations_rule(
    stem: str, ignorable: bool | None, refused: str | None
) -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        row: dict[str, Any] = {"type": "vendor/note", "seq": len(rows), "time": 1, "data": {}}
        if ignorable:
            row["ignorable"] = True
        rows.append(row)

    if refused is None:
        session = _restore(_named(stem), edit)
        assert session.events[-1].type == "vendor/note"
        return
    with pytest.raises(SessionValidationError, match=refused):
        _restore(_named(stem), edit)


def test_assistant_chunks_are_not_rows_of_a_later_generation() -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        rows.append(
            {
                "type": "assistant/chunk",
                "seq": len(rows),
                "time": 1,
                "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta"}},
            }
        )

    with pytest.raises(SessionValidationError, match="assistant/chunk is not a v2 event"):
        _restore(_named("sdk--text-turn--session.v2"), edit)


def test_a_v3_request_header_may_not_carry_the_system_prompt() -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        _find(rows, "request/header")["data"]["header"]["system"] = "old"

    with pytest.raises(SessionValidationError, match="no system"):
        _restore(_named("sdk--ptc-turn"), edit)


def test_a_developer_header_seq_must_name_an_earlier_request_header() -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        _find(rows, "developer/message")["data"]["headerSeq"] = 14

    with pytest.raises(SessionValidationError, match="names a tool/call"):
        _restore(_named("sdk--dynamic-tool-updates"), edit)


def test_a_seeded_log_without_its_marker_is_refused() -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        _find(rows, "session/end-seed")["data"] = {}

    with pytest.raises(SessionValidationError, match="no inherited-cut marker") as raised:
        _restore(_named("sdk--subagent-fork-in-process"), edit)
    assert raised.value.code == "HEADER"


@pytest.mark.parametrize(
    ("change", "error", "words"),
    [
        ({"seedLength": 3}, HeaderDecodeError, "isSeeded"),
        ({"isSeeded": None}, HeaderDecodeError, "isSeeded"),
        ({"delegationDepth": None}, HeaderDecodeError, "delegationDepth"),
        ({"version": 5}, UnsupportedFormatVersionError, "5"),
    ],
)
def test_bad_later_headers_are_refused(change: dict[str, Any], error: type, words: str) -> None:
    wire = json.loads(_lines(_named("sdk--tool-error-details"))[0])
    for key, value in change.items():
        if value is None:
            del wire[key]
        else:
            wire[key] = value
    with pytest.raises(error, match=words):
        decode_header_line(json.dumps(wire))
