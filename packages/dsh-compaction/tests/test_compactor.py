"""The Compactor's triggers (reference §1.4, §1.13 listeners): pressure, overflow, manual."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from dsh_agent import Enter, Extensions, RequestConfig, RequestError, Retry, StepContext
from dsh_compaction import (
    CompactionConfig,
    CompactionError,
    Compactor,
    PruneConfig,
    Summary,
    SummaryRequest,
    check_compaction_log,
)
from dsh_llm import LlmFailure, ToolResultMessage
from dsh_llm.testing import ScriptedModel, text_response
from support import FakeAgent, Log, kinds, of_type, text

CONFIG = RequestConfig(provider="scripted", model="m")


def long_log(turns: int = 3) -> Log:
    log = Log()
    for index in range(turns):
        log.exchange(f"{index}" * 400, f"{index}" * 400)
    log.start_turn()
    return log


def compactor(
    window: int | None, replies: int = 3, **config: Any
) -> tuple[Compactor, ScriptedModel]:
    model = ScriptedModel(
        [text_response(f"- summary {n}") for n in range(replies)], context_window=window
    )
    return Compactor(model, CompactionConfig(**config)), model


async def pre_step(compacting: Compactor, agent: FakeAgent) -> Any:
    extensions = Extensions()
    compacting.install(extensions)
    step = StepContext(agent, 1, 1)  # type: ignore[arg-type]
    return [await listener(step, Enter(())) for listener in extensions.pre_step]


def overflow(agent: FakeAgent, code: str = "CONTEXT_WINDOW_EXCEEDED") -> RequestError:
    failure = LlmFailure(message="too long", code=code)
    return RequestError(agent, 4, 1, 1, failure, CONFIG)  # type: ignore[arg-type]


async def test_a_headerless_session_is_left_alone() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.user("x" * 4000)
    compacting, model = compactor(10)
    assert await compacting.compact_if_needed(FakeAgent(log.session)) is None
    assert model.requests == []


async def test_below_the_threshold_nothing_happens() -> None:
    log = long_log()
    compacting, model = compactor(10_000)
    assert await compacting.compact_if_needed(FakeAgent(log.session)) is None
    assert model.requests == []
    assert "compaction/start" not in kinds(log.session)


async def test_above_the_threshold_the_head_is_compacted_and_the_tail_kept() -> None:
    log = long_log()
    total = Compactor(ScriptedModel()).measure(log.session).total_tokens  # 6 nodes of 108
    compacting, model = compactor(total + 10, replies=6, retain_tokens=200)
    surface = log.session.surface
    result = await compacting.compact_if_needed(FakeAgent(log.session))
    assert result is not None
    assert result.shadowed_seqs == surface[:4]  # the last two nodes (216 tokens) are retained
    assert log.session.surface == (result.checkpoint_seq, *surface[4:])
    # the four nodes and the instruction do not fit one summary request: a slice for each
    assert len(model.requests) == 4
    assert compacting.measure(log.session).total_tokens < compacting.policy(None, None).threshold(
        total + 10
    )


async def test_a_big_system_prompt_alone_gives_pressure_but_nothing_to_compact() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.user("hi")
    log.header(system="s" * 8000)
    compacting, model = compactor(1000)
    assert await compacting.compact_if_needed(FakeAgent(log.session)) is None
    assert model.requests == []


async def test_a_model_without_a_window_is_warned_once_per_target(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = long_log()
    compacting, _model = compactor(None)
    with pytest.raises(CompactionError) as caught:
        await compacting.compact_if_needed(FakeAgent(log.session))
    assert caught.value.code == "config"
    agent = FakeAgent(log.session)
    with caplog.at_level(logging.WARNING, logger="dsh_compaction"):
        assert await pre_step(compacting, agent) == [None]
        assert await pre_step(compacting, agent) == [None]  # never rejects a step
    assert len([r for r in caplog.records if "no context window" in r.message]) == 1


async def test_a_retained_tail_not_below_the_threshold_is_a_config_error() -> None:
    log = long_log()
    compacting, _ = compactor(100, retain_tokens=500)
    with pytest.raises(CompactionError, match="retained tail"):
        await compacting.compact_if_needed(FakeAgent(log.session))


async def test_still_above_after_the_allowed_attempts_is_an_error() -> None:
    log = long_log(10)  # 20 nodes of 108 tokens; a tail of 8 stays, above the threshold
    compacting, _model = compactor(1000, replies=20, compaction_retries=0, retain_tokens=780)
    with pytest.raises(CompactionError, match="after 1 compaction attempt") as caught:
        await compacting.compact_if_needed(FakeAgent(log.session))
    assert caught.value.code == "still-above"
    assert len(of_type(log.session, "compaction/summary")) == 1  # the landed one stays


async def test_pruning_that_suffices_makes_no_summary() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.user("go")
    log.header()
    log.answer("", calls=[("c1", "bash", {})])
    log.result("c1", [text("x" * 2000)])
    log.end_step()
    prune = PruneConfig(threshold_chars=100, head_chars=20, tail_chars=20)
    compacting, model = compactor(400, prune=prune)
    assert await compacting.compact_if_needed(FakeAgent(log.session)) is None
    assert kinds(log.session)[-2:] == ["compaction/prune", "tool/result"]
    assert model.requests == []


async def test_otherwise_the_summary_reads_the_pruned_surface() -> None:
    log = long_log(2)
    log.start_step()
    log.answer("", calls=[("c1", "bash", {})])
    log.result("c1", [text("x" * 2000)])
    log.end_step()
    log.start_step()
    log.user("y" * 400)
    prune = PruneConfig(threshold_chars=100, head_chars=20, tail_chars=20)
    compacting, model = compactor(700, replies=6, prune=prune, retain_tokens=50)
    result = await compacting.compact_if_needed(FakeAgent(log.session))
    assert result is not None
    assert "compaction/prune" in kinds(log.session)
    sent = [message for request in model.requests for message in request.messages]
    results = [m for m in sent if isinstance(m, ToolResultMessage)]
    assert len(results[0].content[0].content[0].text) < 100  # type: ignore[union-attr]


async def test_overflow_compacts_everything_but_the_newest_unit_and_retries() -> None:
    log = long_log()
    compacting, model = compactor(None)  # no window needed for overflow
    agent = FakeAgent(log.session)
    newest = log.session.surface[-1]
    decision = await compacting._request_error(overflow(agent))
    assert isinstance(decision, Retry)
    assert log.session.surface[1:] == (newest,)
    assert len(model.requests) == 1


async def test_overflow_delegates_when_it_is_not_ours_or_nothing_can_be_done() -> None:
    log = long_log()
    compacting, model = compactor(None)
    agent = FakeAgent(log.session)
    assert await compacting._request_error(overflow(agent, "SERVER")) is None
    single = Log()
    single.start_turn()
    single.start_step()
    single.user("x" * 400)
    single.header()
    assert await compacting._request_error(overflow(FakeAgent(single.session))) is None
    assert "compaction/start" not in kinds(single.session)
    headerless = Log()
    headerless.start_turn()
    assert await compacting._request_error(overflow(FakeAgent(headerless.session))) is None
    assert model.requests == []


async def test_the_overflow_cap_counts_between_successful_answers() -> None:
    log = long_log(4)
    compacting, model = compactor(None)
    agent = FakeAgent(log.session)
    assert isinstance(await compacting._request_error(overflow(agent)), Retry)
    log.session.append("compaction/prune", {"note": "a log-only event changes nothing"})
    assert await compacting._request_error(overflow(agent)) is None  # the cap (1) is reached
    log.start_step()
    log.answer("fresh answer " * 30)
    log.end_step()
    log.start_step()
    log.user("z" * 400)
    assert isinstance(await compacting._request_error(overflow(agent)), Retry)  # reset
    assert len(model.requests) == 2


async def test_overflow_recovery_can_be_turned_off_per_model() -> None:
    log = long_log()
    config = {"models": [{"provider": "scripted", "model": "m", "max_overflow_retries": 0}]}
    compacting = Compactor(ScriptedModel(), CompactionConfig.model_validate(config))
    assert await compacting._request_error(overflow(FakeAgent(log.session))) is None


async def test_a_prune_alone_counts_as_progress_for_overflow() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.user("go")
    log.header()
    log.answer("", calls=[("c1", "bash", {})])
    log.result("c1", [text("x" * 20_000)])
    log.end_step()
    log.start_step()

    async def failing(request: SummaryRequest) -> Summary:
        raise RuntimeError("summary down")

    compacting = Compactor(ScriptedModel(), summarizer=lambda model: failing)
    decision = await compacting._request_error(overflow(FakeAgent(log.session)))
    assert isinstance(decision, Retry)
    assert kinds(log.session)[-4:] == [
        "compaction/prune",
        "tool/result",
        "compaction/start",
        "compaction/end",
    ]


async def test_auto_false_mounts_no_trigger() -> None:
    extensions = Extensions()
    Compactor(ScriptedModel(), CompactionConfig(auto=False)).install(extensions)
    assert (len(extensions.pre_step), len(extensions.request_error)) == (0, 0)
    assert len(extensions.session_start) == 1
    on = Extensions()
    disposer = Compactor(ScriptedModel()).install(on)
    assert (len(on.pre_step), len(on.request_error), len(on.session_start)) == (1, 1, 1)
    disposer()
    assert (len(on.pre_step), len(on.request_error), len(on.session_start)) == (0, 0, 0)


async def test_manual_compaction_of_an_idle_agent() -> None:
    log = long_log()
    log.end_turn()
    compacting, _model = compactor(None)
    agent = FakeAgent(log.session)
    result = await compacting.compact_now(agent, flush=agent.flush)
    assert result is not None
    start, _, _, end = log.session.events[-4:]
    assert start.data["turn"] is None
    assert end.data["turn"] is None
    assert agent.flushes == [log.session.next_seq]  # once, after the bracket closed


async def test_manual_compaction_refuses_a_busy_agent_and_writes_nothing_when_empty() -> None:
    log = long_log()
    compacting, _ = compactor(None)
    with pytest.raises(CompactionError, match="turn 4 is open"):
        await compacting.compact_now(FakeAgent(log.session))
    with pytest.raises(CompactionError, match="running"):
        await compacting.compact_now(FakeAgent(log.session, status="running"))
    empty = Log()
    assert await compacting.compact_now(FakeAgent(empty.session)) is None  # nothing logged yet
    assert empty.session.next_seq == 0
    single = Log()
    single.exchange("x" * 400, "only answer")
    assert await compacting.compact_now(FakeAgent(single.session)) is not None
    one_node = Log()
    one_node.start_turn()
    one_node.user("lonely")
    one_node.end_turn()
    assert await compacting.compact_now(FakeAgent(one_node.session)) is None
    assert "compaction/start" not in kinds(one_node.session)


async def test_manual_failures_still_flush_and_a_failed_flush_is_persistence() -> None:
    log = long_log()
    log.end_turn()

    async def failing(request: SummaryRequest) -> Summary:
        raise RuntimeError("summary down")

    compacting = Compactor(ScriptedModel(), summarizer=lambda model: failing)
    agent = FakeAgent(log.session)
    with pytest.raises(CompactionError, match="raised RuntimeError: summary down") as raised:
        await compacting.compact_now(agent, flush=agent.flush)
    assert raised.value.code == "summary"  # classified, so a caller maps it to one sentence
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert agent.flushes == [log.session.next_seq]
    assert "RuntimeError: summary down" in log.session.events[-1].data["error"]

    async def broken_flush() -> None:
        raise OSError("disk full")

    ok, _ = compactor(None)
    with pytest.raises(CompactionError, match="disk full") as caught:
        await ok.compact_now(FakeAgent(log.session), flush=broken_flush)
    assert caught.value.code == "persistence"
    assert log.session.events[-1].type == "compaction/end"


async def test_a_resumed_session_ignores_an_orphan_from_before() -> None:
    log = long_log()
    log.session.append("compaction/start", {"compactionId": "crashed", "turn": 4})
    compacting, _ = compactor(None)
    agent = FakeAgent(log.session)
    assert compacting.busy(log.session)
    extensions = Extensions()
    compacting.install(extensions)
    for listener in extensions.session_start:
        listener(agent, "resume")  # type: ignore[arg-type]
    assert not compacting.busy(log.session)
    assert isinstance(await compacting._request_error(overflow(agent)), Retry)


async def test_a_resume_closes_an_owner_less_orphan_and_the_log_stays_valid() -> None:
    log = long_log()
    log.end_turn()
    log.session.append(
        "compaction/start", {"compactionId": "crashed", "sourceCommandId": "c9", "turn": None}
    )
    compacting, _ = compactor(None)
    extensions = Extensions()
    compacting.install(extensions)
    agent = FakeAgent(log.session)
    for listener in extensions.session_start:
        listener(agent, "resume")  # type: ignore[arg-type]
    assert log.session.events[-1].data == {
        "compactionId": "crashed",
        "sourceCommandId": "c9",
        "turn": None,
        "error": "stale: the process that started this compaction ended first",
    }
    assert not compacting.busy(log.session)
    assert await compacting.compact_now(agent) is not None
    check_compaction_log(log.session.events)
    for listener in extensions.session_start:
        listener(agent, "resume")  # nothing open: nothing appended
    assert log.session.events[-1].type == "compaction/end"
    assert len(of_type(log.session, "compaction/end")) == 2


# -- the review's cases: command ids, cancellation wins, fork seeds ----------------------------


def idle_log() -> Log:
    log = long_log()
    log.end_turn()
    return log


async def test_a_manual_compactions_command_id_is_on_all_four_events() -> None:
    log = idle_log()
    compacting, _ = compactor(None)
    result = await compacting.compact_now(FakeAgent(log.session), source_command_id="cmd-1")
    assert result is not None
    assert result.source_command_id == "cmd-1"
    seqs = (result.start_seq, result.summary_seq, result.end_seq)
    assert [log.session.events[seq].data["sourceCommandId"] for seq in seqs] == ["cmd-1"] * 3
    assert log.session.events[result.checkpoint_seq].data["source"] == {
        "kind": "plugin",
        "plugin": "compact",
        "compactionId": result.compaction_id,
        "sourceCommandId": "cmd-1",
    }
    check_compaction_log(list(log.session.events))


async def test_an_empty_command_id_is_refused_before_anything_is_logged() -> None:
    log = idle_log()
    logged = len(log.session.events)
    compacting, model = compactor(None)
    with pytest.raises(ValueError, match="source_command_id"):
        await compacting.compact_now(FakeAgent(log.session), source_command_id="")
    assert len(log.session.events) == logged
    assert model.requests == []


def hanging_summarizer(entered: asyncio.Event) -> Any:
    def make(model: Any) -> Any:
        async def summarize(request: SummaryRequest) -> Summary:
            entered.set()
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

        return summarize

    return make


async def test_a_cancelled_manual_compaction_stays_cancelled_when_its_flush_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = idle_log()
    entered = asyncio.Event()
    compacting = Compactor(ScriptedModel(), summarizer=hanging_summarizer(entered))

    async def broken_flush() -> None:
        raise OSError("disk full")

    task = asyncio.ensure_future(compacting.compact_now(FakeAgent(log.session), flush=broken_flush))
    await entered.wait()
    task.cancel()
    with caplog.at_level(logging.WARNING, "dsh_compaction"), pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert "disk full" in caplog.text  # the failed flush is reported, not lost
    assert log.session.events[-1].type == "compaction/end"
    assert log.session.events[-1].data["error"] == "cancelled"


async def test_a_cancellation_wins_when_the_closing_end_cannot_be_appended(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = long_log()  # a turn is open: the pressure path
    total = Compactor(ScriptedModel()).measure(log.session).total_tokens
    entered = asyncio.Event()
    compacting = Compactor(
        ScriptedModel(context_window=total + 10),
        CompactionConfig(retain_tokens=100),
        summarizer=hanging_summarizer(entered),
    )
    session = log.session
    append = session.append

    def failing_end(kind: str, data: Any, **options: Any) -> Any:
        if kind == "compaction/end":
            raise OSError("log closed")
        return append(kind, data, **options)

    session.append = failing_end  # type: ignore[method-assign]
    task = asyncio.ensure_future(pre_step(compacting, FakeAgent(session)))
    await entered.wait()
    task.cancel()
    with caplog.at_level(logging.WARNING, "dsh_compaction"), pytest.raises(asyncio.CancelledError):
        await task
    assert "could not be closed" in caplog.text
    assert kinds(session)[-1] == "compaction/start"  # the visible orphan, as the reference says


async def test_a_fork_seeds_open_bracket_ends_with_the_seed_and_a_resume_adds_nothing() -> None:
    log = idle_log()
    log.session.append("compaction/start", {"compactionId": "mid-parent", "turn": None})
    child = log.session.fork("child")
    assert kinds(child)[-2:] == ["compaction/start", "session/end-seed"]
    compacting, _ = compactor(None)
    extensions = Extensions()
    compacting.install(extensions)
    seeded = len(child.events)
    for listener in extensions.session_start:
        listener(FakeAgent(child), "resume")  # type: ignore[arg-type]
    assert len(child.events) == seeded  # no stale end after the seed closed it
    assert not compacting.busy(child)
    check_compaction_log(list(child.events))
    assert await compacting.compact_now(FakeAgent(child)) is not None
    check_compaction_log(list(child.events))
