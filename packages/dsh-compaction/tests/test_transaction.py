"""The compaction bracket as format v0 logs it (reference §1.8–§1.11)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dsh_compaction import (
    CHECKPOINT_CLOSE,
    CHECKPOINT_OPEN,
    BracketState,
    CompactionError,
    CompactionRange,
    Summary,
    SummaryFailure,
    SummaryRequest,
    TokenMeter,
    run_compaction,
    select_compactable_range,
)
from dsh_llm import Message
from dsh_session import Session
from support import Log, kinds, of_type, text


def long_log() -> Log:
    """Two finished turns (long prompt and answer each), then an open third turn."""
    log = Log()
    log.exchange("p" * 400, "a" * 400)
    log.exchange("q" * 400, "b" * 400)
    log.start_turn()
    return log


def summarizer(text_value: str = "- the gist", **fields: Any) -> Any:
    seen: list[SummaryRequest] = []

    async def summarize(request: SummaryRequest) -> Summary:
        seen.append(request)
        return Summary(
            blocks=({"type": "text", "text": text_value},), provider="p", model="m", **fields
        )

    summarize.seen = seen  # type: ignore[attr-defined]
    return summarize


def request_for(session: Session) -> Any:
    def build(messages: tuple[Message, ...]) -> SummaryRequest:
        return SummaryRequest(
            session_id=session.id,
            provider="p",
            model="m",
            system=None,
            tools=(),
            prefix=(),
            messages=messages,
            max_tokens=100,
        )

    return build


def selection(log: Log, retain: int = 0) -> CompactionRange:
    picked = select_compactable_range(
        log.session.id, TokenMeter().measure(log.session).nodes, retain
    )
    assert picked is not None
    return picked


async def compact(log: Log, summarize: Any = None, *, manual: bool = False, **kw: Any) -> Any:
    return await run_compaction(
        log.session,
        BracketState(),
        TokenMeter(),
        selection(log),
        summarize or summarizer(),
        request_for(log.session),
        manual=manual,
        **kw,
    )


async def test_a_compaction_logs_the_four_events_and_replaces_the_range() -> None:
    log = long_log()
    shadowed, kept = log.session.surface[:-1], log.session.surface[-1]
    meter = TokenMeter()
    price = sum(node.tokens for node in meter.measure(log.session).nodes[: len(shadowed)])
    result = await compact(log, summarizer(usage={"inputTokens": 5, "outputTokens": 2}))
    assert kinds(log.session)[-4:] == [
        "compaction/start",
        "compaction/summary",
        "user/message",
        "compaction/end",
    ]
    start, summary, checkpoint, end = log.session.events[-4:]
    cid = result.compaction_id
    assert start.data == {"compactionId": cid, "turn": 3}
    assert summary.data == {
        "compactionId": cid,
        "summary": [text("- the gist")],
        "shadowedRange": {"start": shadowed[0], "end": shadowed[-1]},
        "shadowedSeqs": list(shadowed),
        "shadowedTokenCount": price,
        "provider": "p",
        "model": "m",
        "usage": {"inputTokens": 5, "outputTokens": 2},
    }  # a custom summarizer: no rawOutput, no llmStreamCall
    wire = checkpoint.to_wire()
    assert wire["surfaceOp"] == {"op": "replace", "start": shadowed[0], "end": shadowed[-1]}
    assert wire["sourceEventSeqs"] == [start.seq, summary.seq, *shadowed]
    assert wire["data"]["source"] == {"kind": "plugin", "plugin": "compact", "compactionId": cid}
    assert end.data == {"compactionId": cid, "turn": 3}
    assert log.session.surface == (checkpoint.seq, kept)
    assert (result.start_seq, result.summary_seq, result.checkpoint_seq, result.end_seq) == (
        start.seq,
        summary.seq,
        checkpoint.seq,
        end.seq,
    )
    assert result.shadowed_range == (shadowed[0], shadowed[-1])
    assert result.shadowed_token_count == price
    assert result.checkpoint_tokens < price


async def test_the_checkpoint_derives_first_with_its_tags_and_replays_equal() -> None:
    log = long_log()
    last_answer = log.session.derive_messages()[-1]
    await compact(log)
    derived = log.session.derive_messages()
    assert len(derived) == 2
    head = derived[0]
    assert head.role == "user"
    assert head.content[0].text.endswith(CHECKPOINT_OPEN)  # type: ignore[union-attr]
    assert head.content[1].text == "- the gist"  # type: ignore[union-attr]
    assert head.content[-1].text == CHECKPOINT_CLOSE  # type: ignore[union-attr]
    assert derived[1] == last_answer
    replay = Session(log.session.header, log.session.events)
    assert replay.derive_messages() == derived
    assert replay.replace_generation == log.session.replace_generation == 1
    assert len(of_type(log.session, "user/message")) == 3  # the originals stay in the log


async def test_the_summarizer_gets_the_shadowed_messages_in_surface_order() -> None:
    log = long_log()
    summarize = summarizer()
    expected = log.session.derive_messages()[:-1]
    await compact(log, summarize)
    (request,) = summarize.seen
    assert list(request.messages) == expected


async def test_a_second_compaction_merges_the_first_checkpoint() -> None:
    log = long_log()
    first = await compact(log)
    log.start_step()
    log.user("r" * 400)
    log.answer("c" * 400)
    log.end_step()
    summarize = summarizer("- merged")
    second = await compact(log, summarize)
    assert second.shadowed_seqs[0] == first.checkpoint_seq  # the checkpoint sits at the head
    assert summarize.seen[0].messages[0].source.plugin == "compact"
    assert log.session.derive_messages()[0].content[1].text == "- merged"  # type: ignore[union-attr]


async def test_an_automatic_compaction_needs_an_open_turn() -> None:
    log = Log()
    log.exchange("p" * 400, "a" * 400)
    with pytest.raises(CompactionError) as caught:
        await compact(log)
    assert caught.value.code == "no-open-turn"
    assert "compaction/start" not in kinds(log.session)


async def test_a_manual_compaction_is_owner_less_and_refuses_an_open_turn() -> None:
    log = Log()
    log.exchange("p" * 400, "a" * 400)
    log.exchange("q" * 400, "b" * 400)
    await compact(log, manual=True, source_command_id="cmd-1")
    start, summary, _, end = log.session.events[-4:]
    assert start.data["turn"] is None
    assert end.data["turn"] is None
    assert start.data["sourceCommandId"] == summary.data["sourceCommandId"] == "cmd-1"
    assert list(summary.data)[:2] == ["compactionId", "sourceCommandId"]
    log.start_turn()
    with pytest.raises(CompactionError) as caught:
        await compact(log, manual=True)
    assert caught.value.code == "busy"


async def test_a_live_bracket_is_busy_and_a_stale_one_is_ignored() -> None:
    log = long_log()
    log.session.append("compaction/start", {"compactionId": "orphan", "turn": 3})
    with pytest.raises(CompactionError, match="orphan") as caught:
        await compact(log)
    assert caught.value.code == "busy"
    stale = BracketState()
    stale.lifecycle_start = log.session.next_seq  # the orphan came from an earlier process
    await run_compaction(
        log.session, stale, TokenMeter(), selection(log), summarizer(), request_for(log.session)
    )
    assert log.session.events[-1].type == "compaction/end"
    seeded = long_log()
    seeded.session.append("compaction/start", {"compactionId": "orphan", "turn": 3})
    seeded.session.append("session/end-seed", {})
    await compact(seeded)  # an end-seed after the orphan makes it stale
    assert seeded.session.events[-1].type == "compaction/end"


async def test_bad_ranges_are_refused_before_anything_is_logged() -> None:
    log = long_log()
    length = log.session.next_seq
    surface = log.session.surface
    for bad, code in (
        (CompactionRange(2, 1, (surface[2], surface[1])), "range"),
        (CompactionRange(0, 9, tuple(surface)), "range"),
        (CompactionRange(0, 0, (999,)), "changed"),
    ):
        with pytest.raises(CompactionError) as caught:
            await run_compaction(
                log.session,
                BracketState(),
                TokenMeter(),
                bad,
                summarizer(),
                request_for(log.session),
            )
        assert caught.value.code == code
    tool = Log()
    tool.start_turn()
    tool.start_step()
    tool.user("p" * 400)
    tool.header()
    tool.answer("", calls=[("c1", "bash", {})])
    tool.result("c1", [text("out")])
    tool.end_step()
    unbalanced = CompactionRange(0, 1, tool.session.surface[:2])
    with pytest.raises(CompactionError, match="separates a tool call") as caught:
        await run_compaction(
            tool.session,
            BracketState(),
            TokenMeter(),
            unbalanced,
            summarizer(),
            request_for(tool.session),
        )
    assert log.session.next_seq == length


@pytest.mark.parametrize(
    "failure",
    [SummaryFailure("SERVER", "boom"), RuntimeError("crashed"), ValueError()],
)
async def test_a_failed_summary_closes_the_bracket_with_the_error(failure: Exception) -> None:
    log = long_log()
    surface = log.session.surface

    async def failing(request: SummaryRequest) -> Summary:
        raise failure

    with pytest.raises((CompactionError, RuntimeError, ValueError)) as caught:
        await compact(log, failing)
    assert kinds(log.session)[-2:] == ["compaction/start", "compaction/end"]
    end = log.session.events[-1]
    assert end.data["error"]
    assert type(failure).__name__ in end.data["error"] or "boom" in end.data["error"]
    assert log.session.surface == surface
    if isinstance(failure, SummaryFailure):
        assert isinstance(caught.value, CompactionError)
        assert (caught.value.code, caught.value.failure_code) == ("summary", "SERVER")


async def test_a_summary_that_is_not_smaller_is_refused() -> None:
    log = long_log()
    surface = log.session.surface
    with pytest.raises(CompactionError, match="not smaller") as caught:
        await compact(log, summarizer("x" * 10_000))
    assert caught.value.failure_code == "NOT_SMALLER"
    assert "not smaller" in log.session.events[-1].data["error"]
    assert log.session.surface == surface


async def test_a_log_only_append_during_the_summary_is_fine_a_surface_append_is_not() -> None:
    log = long_log()

    async def logs_a_header(request: SummaryRequest) -> Summary:
        log.header(system="changed", reason="change")
        return await summarizer()(request)

    await compact(log, logs_a_header)
    assert log.session.events[-1].data.get("error") is None

    other = long_log()
    surface = other.session.surface

    async def appends_a_message(request: SummaryRequest) -> Summary:
        other.user("sneaked in")
        return await summarizer()(request)

    with pytest.raises(CompactionError) as caught:
        await compact(other, appends_a_message)
    assert caught.value.code == "changed"
    assert other.session.surface == (*surface, other.session.surface[-1])  # only the append


async def test_a_manual_compaction_tolerates_context_appended_after_its_span() -> None:
    log = Log()
    log.exchange("p" * 400, "a" * 400)
    log.exchange("q" * 400, "b" * 400)

    async def injects(request: SummaryRequest) -> Summary:
        log.user("injected while summarizing")
        return await summarizer()(request)

    await compact(log, injects, manual=True)
    derived = log.session.derive_messages()
    assert derived[0].source.plugin == "compact"  # type: ignore[union-attr]
    assert derived[-1].content[0].text == "injected while summarizing"  # type: ignore[union-attr]


async def test_cancellation_mid_summary_closes_the_bracket_and_propagates() -> None:
    log = long_log()
    surface = log.session.surface
    started = asyncio.Event()

    async def hangs(request: SummaryRequest) -> Summary:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    task = asyncio.ensure_future(compact(log, hangs))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert kinds(log.session)[-2:] == ["compaction/start", "compaction/end"]
    assert log.session.events[-1].data["error"] == "cancelled"
    assert log.session.surface == surface
    assert BracketState().catch_up(log.session).live_bracket() is None
