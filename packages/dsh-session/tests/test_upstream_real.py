"""Issue 13: real logs the TypeScript harness wrote beyond the eleven (``fixtures/upstream-real``,
see its README) read, become a ``Session``, derive, and keep their stored bytes; and every one of
the eleven ``upstream-v0`` logs does too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh_llm import (
    AssistantMessage,
    ImageBlock,
    Message,
    OtherSource,
    PluginSource,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)
from dsh_session import (
    Session,
    SessionEvent,
    decode_header_line,
    decode_rows,
    encode_rows,
    is_known_event_type,
    legacy_message_id,
)

FIXTURES = Path(__file__).parent / "fixtures"
REAL = sorted((FIXTURES / "upstream-real").glob("*.jsonl"))
V0 = sorted((FIXTURES / "upstream-v0").glob("*.jsonl"))


def _load(path: Path) -> tuple[Session, list[SessionEvent], list[bytes]]:
    lines = path.read_bytes()[:-1].split(b"\n")
    header, inherited = decode_header_line(lines[0])
    events, consumed = decode_rows(lines[1:], 0)
    assert consumed == len(lines) - 1
    return Session(header, events, inherited_event_count=inherited), events, lines


def _named(stem: str) -> Path:
    (path,) = [p for p in REAL if p.name.startswith(stem)]
    return path


def test_there_are_eighteen_real_logs_and_eleven_v0_logs() -> None:
    assert (len(REAL), len(V0)) == (18, 11)


@pytest.mark.parametrize("path", REAL + V0, ids=[p.stem for p in REAL + V0])
def test_every_log_becomes_a_session_and_derives(path: Path) -> None:
    session, events, _ = _load(path)
    assert session.next_seq == len(events)
    messages = session.derive_messages()
    assert len(messages) <= len(session.surface)
    if session.surface:
        assert messages


@pytest.mark.parametrize("path", REAL, ids=[p.stem for p in REAL])
def test_the_stored_rows_encode_back_to_the_same_bytes(path: Path) -> None:
    _, events, lines = _load(path)
    packed = b"{" in lines[1] and any(b'"seq0"' in line for line in lines[1:])
    assert encode_rows(events, pack_chunks=packed) == lines[1:]


@pytest.mark.parametrize(
    ("stem", "kind", "field"),
    [
        ("goal-multi-turn-actions", "goal", "goalId"),
        ("code-mode-workspace-context", "agent-instructions", "baseline"),
        ("workspace-context", "workspace-instructions", "baselineIdentity"),
        ("skill-load", "skill-catalog", "entries"),
        ("subagent-continuable--session.1--ee8dd7986b", "coordinator", "senderSessionId"),
        ("subagent-report", "subagent-report", "senderSessionId"),
        ("subagent-continuable-inheritance", "subagent-settled", "summary"),
    ],
)
def test_a_source_of_another_kind_derives_as_a_user_message_with_its_fields(
    stem: str, kind: str, field: str
) -> None:
    """Was ``SessionValidationError (code=DERIVE): ... data is not a valid message``."""
    session, events, _ = _load(_named(stem))
    sources = [
        m.source
        for m in session.derive_messages()
        if isinstance(m, UserMessage) and isinstance(m.source, OtherSource)
    ]
    matching = [s for s in sources if s.kind == kind]
    assert matching
    stored = [
        e.to_wire()["data"]["source"]
        for e in events
        if e.type == "user/message" and e.to_wire()["data"]["source"]["kind"] == kind
    ]
    assert all(s.to_wire() in stored for s in matching)  # kind and every field, unchanged
    assert any(field in s.fields for s in matching)


@pytest.mark.parametrize(
    ("stem", "where"),
    [
        ("inline-image-prompt", "user"),
        ("code-mode-read-image", "user"),
        ("read-image", "tool"),
    ],
)
def test_an_attachment_image_derives(stem: str, where: str) -> None:
    session, _, _ = _load(_named(stem))
    images: list[ImageBlock] = []
    for message in session.derive_messages():
        if where == "user" and isinstance(message, UserMessage):
            images += [b for b in message.content if isinstance(b, ImageBlock)]
        if where == "tool" and isinstance(message, ToolResultMessage):
            images += [b for b in message.result.content if isinstance(b, ImageBlock)]
    assert images
    assert all(not image.is_inline and image.media_type == "image/png" for image in images)
    attachment = images[0].attachment
    assert attachment is not None
    assert attachment.attachment_id.startswith("sha256:")
    assert (attachment.width, attachment.height, attachment.bytes) == (1, 1, 69)


def test_a_pre_react_loop_steering_log_projects_and_keeps_its_stored_events() -> None:
    """Web UI ``steering`` snapshot before the react-loop change: the steer derives as the same
    identified user message, the turn/start trigger is dropped, the stored events are as read."""
    session, events, lines = _load(_named("steering--session--8345bb04a0"))
    (seq,) = [e.seq for e in events if e.type == "steering/message"]
    stored = events[seq].to_wire()["data"]
    projected = session.events[seq]
    assert projected.type == "user/message"
    assert projected.to_wire()["data"] == {
        "content": stored["content"],
        "source": stored["source"],
        "id": legacy_message_id("session-steering", seq),
        "role": "user",
    }
    assert seq in session.surface
    steer = [m for m in session.derive_messages() if isinstance(m, UserMessage)][-1]
    assert steer.id == f"legacy-message:session-steering:{seq}"
    assert "BANANA" in steer.content[0].text  # type: ignore[union-attr]
    assert "trigger" in events[0].to_wire()["data"]
    assert session.events[0].to_wire()["data"] == {"turn": 1}
    assert events[seq].type == "steering/message"  # the decoded rows are not rewritten
    assert encode_rows(events, pack_chunks=True) == lines[1:]


def test_a_wrapped_steering_message_becomes_its_message() -> None:
    session, events, _ = _load(_named("hook-cc-stop-continue"))
    (seq,) = [e.seq for e in events if e.type == "steering/message"]
    assert session.events[seq].type == "user/message"
    assert session.events[seq].to_wire()["data"] == events[seq].to_wire()["data"]["message"]


@pytest.mark.parametrize(
    ("stem", "reason"),
    [
        ("cancel-tool-calls", {"kind": "aborted", "reason": {"kind": "legacy"}}),
        (
            "empty-response-retry",
            {
                "kind": "error",
                "error": {
                    "message": "model returned a completed response with no content",
                    "code": "EMPTY_RESPONSE",
                },
            },
        ),
        (
            "subagent-continuable--session.1--de9a8692df",
            {"kind": "error", "error": {"message": "snapshot disk full", "code": "UNKNOWN"}},
        ),
        (
            "error-finish",
            {
                "kind": "error",
                "error": {"message": "simulated provider error (HTTP 401)", "code": "AUTH"},
            },
        ),
    ],
)
def test_old_turn_end_reasons_project_to_the_current_ones(
    stem: str, reason: dict[str, object]
) -> None:
    session, events, _ = _load(_named(stem))
    ends = [e for e in session.events if e.type == "turn/end"]
    assert reason in [e.to_wire()["data"]["reason"] for e in ends]
    stored = [e.to_wire()["data"]["reason"] for e in events if e.type == "turn/end"]
    assert reason not in stored


# -- compaction-recovery: the compaction records, before and after their rename ------------

COMPACTION_RECOVERY = ("aacab0cafd", "b80290ea4e")  # compaction/* names, then compact/* names
COMPACTION_ID = "338e88fa-e78b-4d49-bd38-8f919e85f5e1"
SUMMARY = "The request established a durable compaction premise."


def _recovery(commit: str) -> tuple[Session, list[SessionEvent], list[bytes]]:
    return _load(_named(f"compaction-recovery--session--{commit}"))


def _text(message: Message) -> str:
    return "".join(b.text for b in message.content if isinstance(b, TextBlock))


def _without_ids(messages: list[Message]) -> list[Message]:
    """The two snapshots were recorded separately, so each message has its own random id."""
    return [m.model_copy(update={"id": None}) for m in messages]


@pytest.mark.parametrize("commit", COMPACTION_RECOVERY)
def test_a_compaction_recovery_log_derives_the_checkpoint_and_the_continued_turn(
    commit: str,
) -> None:
    session, events, _ = _recovery(commit)
    assert session.surface == (21, 13, 15, 28)
    assert session.replace_generation == 1
    checkpoint, call, result, final = session.derive_messages()
    assert isinstance(checkpoint, UserMessage)
    assert isinstance(checkpoint.source, PluginSource)
    assert checkpoint.source.plugin == "compact"
    assert checkpoint.source.to_wire()["compactionId"] == COMPACTION_ID
    assert "<compacted-summary>" in _text(checkpoint)
    assert SUMMARY in _text(checkpoint)
    assert checkpoint.id == events[21].to_wire()["data"]["id"]
    assert isinstance(call, AssistantMessage)
    (block,) = call.content
    assert isinstance(block, ToolCallBlock)
    assert block.id == "call_compaction_marker"
    assert isinstance(result, ToolResultMessage)
    assert result.result.tool_call_id == "call_compaction_marker"
    assert isinstance(final, AssistantMessage)
    assert _text(final) == "COMPACTION RECOVERED"
    prompt = events[4].to_wire()["data"]["id"]  # the original prompt, shadowed by the checkpoint
    assert prompt not in [m.id for m in session.derive_messages()]
    assert [e.type for e in session.events][19:23] == [
        "compaction/start",
        "compaction/summary",
        "user/message",
        "compaction/end",
    ]


@pytest.mark.parametrize("commit", COMPACTION_RECOVERY)
def test_a_compaction_recovery_log_replays_to_the_same_messages(commit: str) -> None:
    session, _, _ = _recovery(commit)
    replayed = Session(session.header, session.events)
    assert replayed.derive_messages() == session.derive_messages()
    assert replayed.replace_generation == session.replace_generation == 1
    assert list(replayed.events) == list(session.events)


def test_the_old_compact_names_read_as_the_current_ones_and_stay_on_disk() -> None:
    """Before commit aacab0cafd (2026-08-13) the harness wrote ``compact/*``; read with an
    alias the log is the renamed one: same types, data, surface and messages."""
    old, stored, lines = _recovery("b80290ea4e")
    new, _, _ = _recovery("aacab0cafd")
    assert [stored[seq].type for seq in (19, 20, 22)] == [
        "compact/start",
        "compact/summary",
        "compact/end",
    ]
    renamed = {19: "compaction/start", 20: "compaction/summary", 22: "compaction/end"}
    for seq, current in renamed.items():
        assert old.events[seq].type == current
        assert old.events[seq].to_wire() == {**stored[seq].to_wire(), "type": current}
    assert [e.type for e in old.events] == [e.type for e in new.events]
    assert old.surface == new.surface
    assert _without_ids(old.derive_messages()) == _without_ids(new.derive_messages())
    assert all(is_known_event_type(e.type) for e in stored)  # a write open resumes it
    assert b'"type":"compact/start"' in lines[20]  # the stored rows are not rewritten
    assert encode_rows(stored, pack_chunks=False) == lines[1:]


@pytest.mark.parametrize("commit", COMPACTION_RECOVERY)
def test_a_restored_compaction_recovery_log_is_continued(commit: str) -> None:
    session, stored, _ = _recovery(commit)
    user: dict[str, Any] = {
        "content": [{"type": "text", "text": "and now?"}],
        "source": {"kind": "user"},
    }
    session.append("turn/start", {"turn": 2}, time=1786123402000)
    session.append("step/start", {"turn": 2, "step": 1}, time=1786123402001)
    session.append("user/message", user, time=1786123402002)
    session.append("step/end", {"turn": 2, "step": 1}, time=1786123402003)
    session.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}}, time=1786123402004)
    assert session.surface == (21, 13, 15, 28, 33)
    assert len(session.derive_messages()) == 5
    reread = Session(session.header, [*stored, *list(session.events)[len(stored) :]])
    assert list(reread.events) == list(session.events)
    assert reread.derive_messages() == session.derive_messages()
