"""Retries as the TypeScript harness logs them (reference §2): the exact payloads, the jitter
bounds, the defaults, and a failed attempt's output kept in the log but never in the history."""

from __future__ import annotations

from typing import Any

from dsh_agent_loop import DEFAULT_RETRY_CODES, RetryPolicy
from dsh_llm import (
    BlockStartChunk,
    FinishChunk,
    FinishReason,
    LlmFailure,
    TextDeltaChunk,
    ToolCallDeltaChunk,
)
from dsh_llm.testing import ScriptedModel, text_response
from loop_support import OPTIONS, MakeLoop, data, of_type


def partial_then_failure(code: str, *, text: str = "half an answ", call: bool = False) -> list[Any]:
    chunks: list[Any] = [
        BlockStartChunk(index=0, block_type="text"),
        TextDeltaChunk(index=0, text=text),
    ]
    if call:
        chunks += [
            BlockStartChunk(index=1, block_type="tool-call"),
            ToolCallDeltaChunk(index=1, id="c1", name="echo", arguments_delta='{"text": "x"}'),
        ]
    failure = LlmFailure(message=f"the provider failed ({code})", code=code)
    return [*chunks, FinishChunk(reason=FinishReason(kind="error", error=failure))]


def test_the_defaults() -> None:
    policy = RetryPolicy()
    assert (policy.max_retries, policy.initial_delay_ms, policy.max_delay_ms, policy.jitter) == (
        5,
        500,
        10_000,
        0.1,
    )
    assert DEFAULT_RETRY_CODES == ("EMPTY_RESPONSE", "RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT")
    assert policy.codes == frozenset(DEFAULT_RETRY_CODES)
    assert "CONTEXT_WINDOW_EXCEEDED" not in policy.codes  # compaction's job


def test_the_policy_key_is_pinned() -> None:
    policy = RetryPolicy(max_retries=2, codes=("SERVER", "RATE_LIMIT"), jitter=0)
    assert policy.key == ["normal", 2, ["RATE_LIMIT", "SERVER"], 500, 10000, 0]


def test_jitter_bounds_and_the_cap() -> None:
    low, high = RetryPolicy(random=lambda: 0.0), RetryPolicy(random=lambda: 1.0)
    assert (low.delay_ms(1, None), high.delay_ms(1, None)) == (450, 550)
    assert high.delay_ms(2, None) == 1100
    assert low.delay_ms(10, None) == 9000  # 10 s capped, then scaled down by the jitter
    assert high.delay_ms(10, None) == 10_000  # never above the cap
    assert low.delay_ms(1, 800) == 800  # a provider's Retry-After within the cap: exact
    assert RetryPolicy(initial_delay_ms=0, max_delay_ms=0).delay_ms(3, None) == 0


async def test_the_exact_payloads_inside_the_failed_step(make_loop: MakeLoop) -> None:
    async def no_wait(seconds: float) -> None:
        return None

    model = ScriptedModel([partial_then_failure("EMPTY_RESPONSE"), text_response("done")])
    loop = make_loop(model, retry=RetryPolicy(sleep=no_wait, random=lambda: 0.5))
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    events = agent.session.events
    (retry,) = of_type(events, "llm/retry")
    payload = data(retry)
    assert list(payload) == [
        "retryId",
        "turn",
        "step",
        "provider",
        "mode",
        "policyKey",
        "retry",
        "maxRetries",
        "delayMs",
        "failure",
    ]
    assert {key: value for key, value in payload.items() if key != "retryId"} == {
        "turn": 1,
        "step": 1,
        "provider": "scripted",
        "mode": "normal",
        "policyKey": RetryPolicy().key,
        "retry": 1,
        "maxRetries": 5,
        "delayMs": 500,
        "failure": {"message": "the provider failed (EMPTY_RESPONSE)", "code": "EMPTY_RESPONSE"},
    }
    (started,) = of_type(events, "llm/retry-started")
    assert data(started) == {"retryId": payload["retryId"], "turn": 1, "step": 1, "retry": 1}
    assert started.seq == retry.seq + 1
    assert len(of_type(events, "step/start")) == 1  # the retry re-entered the same step
    assert retry.ignorable is None
    assert "surfaceOp" not in retry.to_wire()


async def test_a_failed_attempt_stays_in_the_log_but_never_in_the_history(
    make_loop: MakeLoop,
) -> None:
    async def no_wait(seconds: float) -> None:
        return None

    model = ScriptedModel([partial_then_failure("SERVER", call=True), text_response("clean")])
    loop = make_loop(model, retry=RetryPolicy(sleep=no_wait))
    assert "echo" in loop.tools.names()  # the failed attempt named a tool that exists
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    events = agent.session.events
    failed_chunks = [e.seq for e in of_type(events, "assistant/chunk")][:5]
    (message,) = of_type(events, "assistant/message")
    assert message.source_event_seqs is not None
    assert not set(message.source_event_seqs) & set(failed_chunks)
    assert of_type(events, "tool/call") == []  # the failed attempt's call never ran
    texts = [str(m.to_wire()) for m in agent.session.derive_messages()]
    assert not any("half an answ" in t or "provider failed" in t for t in texts)
    retried = model.requests[1]
    assert not any("half an answ" in str(m.to_wire()) for m in retried.messages)
    assert data(events[-1])["reason"] == {"kind": "completed"}
