"""Tool-result pruning (reference §1.6)."""

from __future__ import annotations

import pytest

from dsh_compaction import (
    PRUNE_MARKER,
    CompactionError,
    PruneConfig,
    TokenMeter,
    prune_content,
    prune_session,
)
from dsh_session import Session
from support import Log, kinds, text

SMALL = PruneConfig(threshold_chars=60, head_chars=10, tail_chars=5)


def test_the_marker_is_39_code_points() -> None:
    assert len(PRUNE_MARKER) == 39


def test_within_the_threshold_nothing_changes() -> None:
    assert prune_content([text("x" * 60)], SMALL) is None


def test_head_and_tail_are_kept_with_the_marker_between() -> None:
    pruned = prune_content([text("H" * 10 + "m" * 100 + "T" * 5)], SMALL)
    assert pruned == [text("H" * 10 + PRUNE_MARKER + "T" * 5)]
    assert prune_content(pruned, SMALL) is None  # a second pass is a no-op


def test_code_points_are_counted_and_never_split() -> None:
    pruned = prune_content([text("😀" * 70)], SMALL)
    assert pruned == [text("😀" * 10 + PRUNE_MARKER + "😀" * 5)]


def test_blocks_keep_their_order_and_emptied_text_blocks_go() -> None:
    image = {"type": "image", "data": "QUJD", "mimeType": "image/png"}
    blocks = [text("a" * 8), image, text("b" * 40), text("c" * 40), image, text("d" * 4)]
    pruned = prune_content(blocks, SMALL)
    # head: 8 a + 2 b; tail: 1 c + 4 d; the marker in the first block the cut touches (the b's)
    assert pruned == [
        text("a" * 8),
        image,
        text("bb" + PRUNE_MARKER),
        text("c"),
        image,
        text("d" * 4),
    ]


def test_a_zero_head_or_tail_still_shrinks() -> None:
    config = PruneConfig(threshold_chars=50, head_chars=0, tail_chars=0)
    assert prune_content([text("x" * 51)], config) == [text(PRUNE_MARKER)]
    tail_only = PruneConfig(threshold_chars=50, head_chars=0, tail_chars=3)
    assert prune_content([text("x" * 60 + "end")], tail_only) == [text(PRUNE_MARKER + "end")]


def _session_with_big_result() -> tuple[Log, int]:
    log = Log()
    log.start_turn()
    log.start_step()
    log.user("go")
    log.header()
    log.answer("", calls=[("c1", "bash", {})])
    seq = log.result("c1", [text("H" * 10 + "m" * 100 + "T" * 5)])
    log.end_step()
    return log, seq


def test_a_pruned_result_is_logged_as_a_prune_and_a_replacing_result() -> None:
    log, original = _session_with_big_result()
    before = TokenMeter().measure(log.session)
    report = prune_session(log.session, SMALL, open_turn=1)
    assert kinds(log.session)[-2:] == ["compaction/prune", "tool/result"]
    prune, replacement = log.session.events[-2], log.session.events[-1]
    priced = {node.seq: node.tokens for node in before.nodes}
    assert prune.data == {
        "shadowedRange": {"start": original, "end": original},
        "shadowedSeqs": [original],
        "shadowedTokenCount": priced[original],
    }
    wire = replacement.to_wire()
    assert wire["surfaceOp"] == {"op": "replace", "start": original, "end": original}
    assert wire["sourceEventSeqs"] == [original]
    original_data = log.session.events[original].data
    assert wire["data"] == {**original_data, "content": [text("H" * 10 + PRUNE_MARKER + "T" * 5)]}
    assert log.session.surface[-1] == replacement.seq
    (pruned,) = report.pruned
    assert (pruned.original_seq, pruned.replacement_seq, pruned.call_id) == (
        original,
        replacement.seq,
        "c1",
    )
    assert (pruned.chars_before, pruned.chars_after) == (115, 54)
    assert report.chars_removed == 61
    derived = log.session.derive_messages()[-1]
    assert derived.content[0].tool_call_id == "c1"  # type: ignore[union-attr]


def test_the_pass_converges_and_replays_equal() -> None:
    log, _ = _session_with_big_result()
    prune_session(log.session, SMALL, open_turn=1)
    length = log.session.next_seq
    assert prune_session(log.session, SMALL, open_turn=1).pruned == ()
    assert log.session.next_seq == length
    replay = Session(log.session.header, log.session.events)
    assert replay.derive_messages() == log.session.derive_messages()
    assert replay.replace_generation == log.session.replace_generation == 1


def test_pruning_outside_a_turn_is_refused_and_disabled_pruning_does_nothing() -> None:
    log, _ = _session_with_big_result()
    with pytest.raises(CompactionError) as caught:
        prune_session(log.session, SMALL, open_turn=None)
    assert caught.value.code == "no-open-turn"
    off = PruneConfig(enabled=False, threshold_chars=60, head_chars=10, tail_chars=5)
    assert prune_session(log.session, off, open_turn=None).pruned == ()


def test_the_message_shape_of_a_tool_result_is_pruned_too() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.header()
    log.answer("", calls=[("c9", "bash", {})])
    call = log.session.append(
        "tool/call", {"turn": 1, "step": 1, "callId": "c9", "name": "bash", "arguments": "{}"}
    )
    message = {
        "source": {"kind": "tool", "callId": "c9"},
        "content": [{"type": "tool-result", "toolCallId": "c9", "content": [text("z" * 100)]}],
    }
    log.session.append(
        "tool/result",
        {"turn": 1, "step": 1, "message": message},
        source_event_seqs=[call.seq],
    )
    report = prune_session(log.session, SMALL, open_turn=1)
    assert report.pruned[0].call_id == "c9"
    data = log.session.events[-1].data
    assert data["message"]["content"][0]["content"] == [text("z" * 10 + PRUNE_MARKER + "z" * 5)]
