"""The summary call fits the routed model's window (issue 33, 3.2): every summary request's
estimate plus its ``max_tokens`` is within the window, a history too big for one request is
summarised in slices into one checkpoint, and a failed overflow compaction says which part
failed."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from dsh_agent import RequestConfig, RequestError, Retry
from dsh_compaction import (
    CHECKPOINT_OPEN,
    CHECKPOINT_PLUGIN,
    CompactionConfig,
    CompactionError,
    Compactor,
    check_compaction_log,
    estimate_envelope,
    estimate_message,
)
from dsh_llm import LlmFailure, ModelRequest, UserMessage
from dsh_llm.testing import ScriptedModel, text_response
from support import FakeAgent, Log, kinds, of_type

CONFIG = RequestConfig(provider="scripted", model="m")


def history(turns: int, chars: int) -> Log:
    """``turns`` exchanges of a ``chars``-character prompt and answer, then an open turn."""
    log = Log()
    for index in range(turns):
        log.exchange(f"{index % 10}" * chars, f"{index % 10}" * chars)
    log.start_turn()
    log.start_step()
    log.user("what now?")
    return log


def overflow(agent: FakeAgent) -> RequestError:
    failure = LlmFailure(message="request exceeds the context size", code="CONTEXT_WINDOW_EXCEEDED")
    return RequestError(agent, 4, 1, 1, failure, CONFIG)  # type: ignore[arg-type]


def summarizing(window: int, replies: int = 40, **config: Any) -> tuple[Compactor, ScriptedModel]:
    model = ScriptedModel(
        [text_response(f"- summary {n}") for n in range(replies)], context_window=window
    )
    return Compactor(model, CompactionConfig(**config)), model


def request_tokens(log: Log, request: ModelRequest) -> int:
    """A summary request's size by the package's own estimate: envelope, messages, instruction
    (the last message)."""
    envelope = estimate_envelope(log.session.request_header)
    return envelope + sum(estimate_message(message) for message in request.messages)


def assert_within(log: Log, model: ScriptedModel, window: int) -> None:
    assert model.requests
    for request in model.requests:
        assert request.max_tokens is not None
        assert request_tokens(log, request) + request.max_tokens <= window, request.max_tokens


@pytest.mark.parametrize("window", [1024, 512])
async def test_a_history_five_times_the_window_is_compacted_in_slices(window: int) -> None:
    log = history(10, window * 5 * 4 // 20)  # 20 messages worth 5 windows in all
    compacting, model = summarizing(window)
    agent = FakeAgent(log.session)
    assert compacting.measure(log.session).total_tokens > 5 * window
    newest = log.session.surface[-1]

    assert isinstance(await compacting._request_error(overflow(agent)), Retry)

    assert_within(log, model, window)
    assert len(model.requests) > 1
    # one checkpoint replaces everything but the newest message
    summaries = of_type(log.session, "compaction/summary")
    assert len(summaries) == 1
    record = summaries[0].to_wire()["data"]
    assert log.session.surface[1:] == (newest,)
    assert compacting.measure(log.session).total_tokens < window
    # every call is logged, oldest first, covering the shadowed seqs once each
    slices = record["slices"]
    assert len(slices) == len(model.requests)
    assert [seq for piece in slices for seq in piece["shadowedSeqs"]] == record["shadowedSeqs"]
    assert [piece["maxTokens"] for piece in slices] == [r.max_tokens for r in model.requests]
    assert record["summary"] == slices[-1]["summary"]
    # every slice after the first opens with the previous slice's summary
    for before, request in zip(slices, model.requests[1:], strict=False):
        carried = request.messages[0]
        assert isinstance(carried, UserMessage)
        assert carried.source.plugin == CHECKPOINT_PLUGIN  # type: ignore[union-attr]
        wire = carried.to_wire()["content"]
        assert wire[0]["text"].endswith(CHECKPOINT_OPEN)
        assert wire[1:-1] == before["summary"]
    check_compaction_log(list(log.session.events))


async def test_the_output_limit_is_what_the_window_leaves() -> None:
    log = history(2, 400)
    compacting, model = summarizing(1024)  # configured 8192
    await compacting._request_error(overflow(FakeAgent(log.session)))
    assert_within(log, model, 1024)
    assert all(r.max_tokens is not None and r.max_tokens < 1024 for r in model.requests)

    roomy = history(2, 400)
    compacting, model = summarizing(100_000, max_tokens=300)
    await compacting._request_error(overflow(FakeAgent(roomy.session)))
    assert [r.max_tokens for r in model.requests] == [300]  # one call, the configured limit


async def test_a_message_too_big_alone_is_shortened_for_the_summary_call() -> None:
    log = history(1, 3000)  # one 750-token prompt, on a 1024-token window with the instruction
    compacting, model = summarizing(1024)
    await compacting._request_error(overflow(FakeAgent(log.session)))
    assert_within(log, model, 1024)
    assert len(model.requests) == 2  # prompt, then answer (the carried summary with it)
    record = of_type(log.session, "compaction/summary")[0].to_wire()["data"]
    assert record["slices"][0]["shortened"] is True
    assert "characters left out of this summary call" in str(model.requests[0].messages[0])


async def test_no_room_for_a_summary_is_a_summary_error_naming_the_numbers() -> None:
    log = Log()
    for index in range(3):
        log.exchange(f"{index}" * 200, f"{index}" * 200)
    compacting, model = summarizing(300)  # the instruction alone takes most of it
    with pytest.raises(CompactionError) as caught:
        await compacting.compact_now(FakeAgent(log.session, status="idle"))
    error = caught.value
    assert error.code == "summary"
    assert error.failure_code == "NO_ROOM"
    assert "300-token window" in error.message
    assert "scripted:m" in error.message
    assert model.requests == []  # nothing too big was sent
    # the bracket is closed with the reason, the surface untouched
    assert kinds(log.session)[-2:] == ["compaction/start", "compaction/end"]
    assert "300-token window" in of_type(log.session, "compaction/end")[-1].data["error"]


async def test_an_overflow_says_whether_the_summary_failed_or_nothing_was_compactable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failed = history(3, 400)
    model = ScriptedModel(
        [[*text_response("")[:-1], *text_response("")[-1:]]], context_window=100_000
    )
    compacting = Compactor(model, CompactionConfig())
    with caplog.at_level(logging.WARNING, logger="dsh_compaction"):
        assert await compacting._request_error(overflow(FakeAgent(failed.session))) is None
    assert "the context window was exceeded and the summary call failed:" in caplog.text
    assert "answered no text" in caplog.text
    assert "nothing could be compacted" not in caplog.text

    caplog.clear()
    single = Log()
    single.start_turn()
    single.start_step()
    single.user("x" * 400)
    single.header()
    with caplog.at_level(logging.WARNING, logger="dsh_compaction"):
        assert await compacting._request_error(overflow(FakeAgent(single.session))) is None
    assert "the context window was exceeded and nothing could be compacted" in caplog.text
    assert "summary call failed" not in caplog.text


async def test_a_system_prompt_and_tools_that_crowd_the_window_are_left_out() -> None:
    log = Log()
    tool = {"name": "bash", "description": "Run a command. " * 150, "parameters": {}}
    log.start_turn()
    log.start_step()
    log.user("0" * 800)
    log.header(system="You fix builds.", tools=[tool])  # about 600 of 1024 tokens
    log.answer("1" * 800)
    log.end_step()
    log.start_step()
    log.user("what now?")
    compacting, model = summarizing(1024)
    assert isinstance(await compacting._request_error(overflow(FakeAgent(log.session))), Retry)
    assert model.requests
    for request in model.requests:
        assert request.system is None
        assert request.tools == []
        assert request.max_tokens is not None
        assert sum(estimate_message(m) for m in request.messages) + request.max_tokens <= 1024
    record = of_type(log.session, "compaction/summary")[0].data
    assert record["withoutSystemAndTools"] is True
