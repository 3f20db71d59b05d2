"""The bracket invariants (reference §1.10): the rejection matrix, and every log this package
writes passes."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_compaction import CompactionInvariantError, check_compaction_log
from dsh_session import Session, SessionHeader, make_event
from support import Log, text
from test_transaction import compact, long_log

START = {"compactionId": "c", "turn": 1}
SUMMARY = {
    "compactionId": "c",
    "summary": [text("s")],
    "shadowedRange": {"start": 0, "end": 0},
    "shadowedSeqs": [0],
    "shadowedTokenCount": 5,
    "provider": "p",
    "model": "m",
}


def events(*spec: tuple[str, Any]) -> list[Any]:
    return [make_event(kind, seq, 0, data) for seq, (kind, data) in enumerate(spec)]


def turn(n: int = 1) -> tuple[str, Any]:
    return ("turn/start", {"turn": n})


def end_turn(kind: str = "completed") -> tuple[str, Any]:
    return ("turn/end", {"turn": 1, "reason": {"kind": kind}})


@pytest.mark.parametrize(
    ("log", "rule"),
    [
        ([turn(), ("compaction/start", START), ("compaction/start", START)], "while c is open"),
        ([turn(), ("compaction/start", {"compactionId": "", "turn": 1})], "non-empty string"),
        (
            [turn(), ("compaction/start", {**START, "sourceCommandId": ""})],
            "sourceCommandId must be",
        ),
        ([turn(), ("compaction/start", {"compactionId": "c", "turn": 2})], "not the open turn 1"),
        ([turn(), ("compaction/start", {"compactionId": "c", "turn": None})], "without an owner"),
        ([("compaction/start", START)], "not the open turn None"),
        ([turn(), ("compaction/start", START), end_turn()], "turn ends inside"),
        ([("compaction/start", {"compactionId": "c", "turn": None}), turn()], "turn starts inside"),
        ([turn(), ("compaction/summary", SUMMARY)], "summary outside"),
        (
            [turn(), ("compaction/start", START), ("compaction/summary", SUMMARY)] * 1
            + [("compaction/summary", SUMMARY)],
            "second summary",
        ),
        (
            [
                turn(),
                ("compaction/start", START),
                ("compaction/summary", {**SUMMARY, "shadowedSeqs": []}),
            ],
            "non-empty list",
        ),
        (
            [
                turn(),
                ("compaction/start", START),
                ("compaction/summary", {**SUMMARY, "shadowedRange": {"start": 0, "end": 3}}),
            ],
            "must span",
        ),
        (
            [
                turn(),
                ("compaction/start", START),
                ("compaction/summary", {**SUMMARY, "shadowedTokenCount": -1}),
            ],
            "non-negative safe integer",
        ),
        ([turn(), ("compaction/end", START)], "without its compaction/start"),
        ([turn(), ("compaction/start", START), ("compaction/end", START)], "needs a summary"),
        (
            [turn(), ("compaction/start", START), ("compaction/end", {**START, "turn": None})],
            "owner differs",
        ),
        (
            [
                turn(),
                ("compaction/start", {**START, "sourceCommandId": "x"}),
                ("compaction/summary", SUMMARY),
            ],
            "sourceCommandId differs",
        ),
    ],
)
def test_each_rule_is_enforced(log: list[tuple[str, Any]], rule: str) -> None:
    with pytest.raises(CompactionInvariantError, match=rule) as caught:
        check_compaction_log(events(*log))
    assert caught.value.seq == len(log) - 1  # the last event is the one that breaks it


def test_a_checkpoint_must_name_the_open_bracket() -> None:
    log = Log()
    log.start_turn()
    prompt = log.user("hi")
    log.session.append(
        "user/message",
        {
            "content": [text("s")],
            "source": {"kind": "plugin", "plugin": "compact", "compactionId": "x"},
        },
        surface_op={"op": "replace", "start": prompt, "end": prompt},
        source_event_seqs=[prompt],
    )
    with pytest.raises(CompactionInvariantError, match="checkpoint outside"):
        check_compaction_log(log.session.events)


def test_valid_brackets_pass_and_crash_remnants_are_cleared() -> None:
    check_compaction_log(
        events(
            turn(),
            ("compaction/start", START),
            ("compaction/end", {**START, "error": "the summary call failed"}),
            end_turn(),
            ("compaction/start", {"compactionId": "m", "turn": None}),
            ("session/end-seed", {}),  # a fork's seed ended with the bracket open
            turn(2),
        )
    )
    check_compaction_log(
        events(turn(), ("compaction/start", START), end_turn("interrupted"), turn(2))
    )


async def test_every_log_this_package_writes_passes() -> None:
    log = long_log()
    await compact(log)
    log.start_step()
    log.user("r" * 400)
    log.answer("c" * 400)
    log.end_step()
    await compact(log)
    log.end_turn()
    log.exchange("s" * 400, "d" * 400)
    await compact(log, manual=True)
    check_compaction_log(log.session.events)
    replay = Session(SessionHeader(id="s", created_at=0), log.session.events)
    check_compaction_log(replay.events)
