"""Persistence (create, checkpoints, resume, fork) against the in-memory backend, and retries.

The same cases against the real JSONL backend, with real processes killed mid-tool, are in
tests-integration/test_agent_loop_jsonl.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dsh_agent import Agent, AgentOptions, Extensions, Fail, RequestError, Retry
from dsh_agent_loop import (
    AgentLoop,
    DuplicateAgentError,
    FlushPolicy,
    LoggedConfigError,
    PersistenceNotConfiguredError,
    ResumeOptionsError,
    RetryPolicy,
)
from dsh_llm import LlmFailure
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_persistence import SessionAlreadyOwnedError, SessionPersistenceNotFoundError
from dsh_session import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, SessionForkError, encode_event
from loop_support import (
    OPTIONS,
    EchoTool,
    MakeLoop,
    MemoryPersistence,
    data,
    echo_args,
    flat,
    kinds,
    of_type,
)


def failing(code: str, *, retry_after_ms: int | None = None) -> list[Any]:
    from dsh_llm import FinishChunk, FinishReason

    failure = LlmFailure(message=f"{code} (test)", code=code, retry_after_ms=retry_after_ms)
    return [FinishChunk(reason=FinishReason(kind="error", error=failure))]


async def test_every_event_reaches_the_handle_and_is_durable_at_turn_end(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    model = ScriptedModel(
        [tool_call_response(("c1", "echo", echo_args("a"))), text_response("done")]
    )
    loop = make_loop(model, persistence=memory)
    agent = await loop.create("s1", options=OPTIONS, cwd="/work")
    agent.followup("go")
    await agent.wait_idle()
    stored = memory.sessions["s1"]
    assert [encode_event(e) for e in stored.events] == [
        encode_event(e) for e in agent.session.events
    ]
    assert stored.durable == len(agent.session.events)  # the turn-end checkpoint
    # before each of the 2 requests, before the tool body, at turn end
    assert memory.flush_calls == 4
    assert stored.header.cwd == "/work"


async def test_a_session_closed_before_any_turn_leaves_nothing(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    loop = make_loop(ScriptedModel([]), persistence=memory)
    agent = await loop.create("s1", options=OPTIONS)
    await agent.aclose()
    assert "s1" not in memory.sessions
    again = await loop.create("s1", options=OPTIONS)  # the id is free again
    assert again.id == "s1"


async def test_a_failed_flush_before_the_request_fails_closed(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    model = ScriptedModel([text_response("never")])
    loop = make_loop(model, persistence=memory)
    agent = await loop.create("s1", options=OPTIONS)
    memory.fail_flushes = True
    agent.followup("go")
    await agent.wait_idle()
    assert model.requests == []
    reason = data(agent.session.events[-1])["reason"]
    assert reason["kind"] == "error"
    assert reason["error"]["code"] == "CHECKPOINT_FAILED"
    assert "the disk is full" in reason["error"]["message"]
    assert "s1" in reason["error"]["message"]


async def test_a_failed_flush_before_a_tool_body_runs_nothing(
    make_loop: MakeLoop, memory: MemoryPersistence, echo: EchoTool
) -> None:
    model = ScriptedModel(
        [tool_call_response(("c1", "echo", echo_args("a")), ("c2", "echo", echo_args("b")))]
    )
    loop = make_loop(model, persistence=memory)
    agent = await loop.create("s1", options=OPTIONS)

    def fail_after_request(event: Any) -> None:
        if event.type == "assistant/message":
            memory.fail_flushes = True

    agent.session.subscribe(fail_after_request)
    agent.followup("go")
    await agent.wait_idle()
    assert echo.calls == []
    results = {flat(e)["callId"]: flat(e) for e in of_type(agent.session.events, "tool/result")}
    assert results["c1"]["error"]["code"] == "CHECKPOINT_FAILED"
    assert results["c2"]["error"]["code"] == "CHECKPOINT_FAILED"
    assert data(agent.session.events[-1])["reason"]["error"]["code"] == "CHECKPOINT_FAILED"
    memory.fail_flushes = False
    await agent.flush()  # nothing was lost: the queued events append once the disk is back
    assert len(memory.sessions["s1"].events) == len(agent.session.events)


async def test_without_checkpoints_nothing_is_flushed_until_close(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    loop = make_loop(
        ScriptedModel([text_response("ok")]), persistence=memory, checkpoints=FlushPolicy(points=())
    )
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    assert memory.flush_calls == 0
    await agent.aclose()
    assert memory.sessions["s1"].durable == len(agent.session.events)


async def test_resume_closes_a_turn_a_crash_left_open_and_continues(
    make_loop: MakeLoop, memory: MemoryPersistence, echo: EchoTool
) -> None:
    model = ScriptedModel([tool_call_response(("c1", "echo", echo_args("slow", wait=True)))])
    first = make_loop(model, persistence=memory)
    agent = await first.create("s1", options=OPTIONS)
    agent.followup("go")
    await echo.started.wait()  # the before-tool checkpoint made tool/call durable
    memory.crash("s1")
    durable = list(memory.sessions["s1"].events)
    assert durable[-1].type == "tool/call"

    second_model = ScriptedModel([text_response("recovered")])
    second = make_loop(second_model, persistence=memory)
    resumed = await second.resume("s1")
    closers = resumed.session.events[len(durable) :]
    assert kinds(closers) == ["tool/result", "step/end", "turn/end"]
    assert data(closers[0])["error"]["code"] == TOOL_OUTCOME_UNKNOWN
    assert closers[0].source_event_seqs == (durable[-1].seq,)
    assert data(closers[2])["reason"] == {"kind": "interrupted"}
    assert resumed.options == OPTIONS  # the route the log's header names

    resumed.followup("what happened?")
    await resumed.wait_idle()
    events = resumed.session.events
    assert [e.seq for e in events] == list(range(len(events)))
    assert [data(e)["turn"] for e in of_type(events, "turn/start")] == [1, 2]
    headers = of_type(events, "request/header")
    assert [data(h)["reason"] for h in headers] == ["initial", "resume"]
    echo.release.set()
    on_disk = list(memory.sessions["s1"].events)
    with pytest.raises(ExceptionGroup) as closing:  # the dead owner cannot store its tail
        await first.aclose()
    assert "lost" in str(closing.value.exceptions[0].exceptions[0])  # type: ignore[union-attr]
    assert memory.sessions["s1"].events == on_disk


async def test_a_call_asked_for_but_never_started_resumes_as_not_started(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    loop = make_loop(ScriptedModel([]), persistence=memory)
    agent = await loop.create("s1", options=OPTIONS)
    session = agent.session
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    header = {"config": {"provider": "scripted", "model": "demo"}}
    session.append("request/header", {"header": header, "reason": "initial"})
    session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "content": [{"type": "tool-call", "id": "c9", "name": "echo", "arguments": "{}"}],
            "provenance": {"provider": "scripted", "model": "demo"},
        },
    )
    await agent.flush()
    memory.crash("s1")
    other = make_loop(ScriptedModel([]), persistence=memory)
    resumed = await other.resume("s1")
    result = of_type(resumed.session.events, "tool/result")[0]
    assert data(result)["error"]["code"] == TOOL_NOT_STARTED
    await loop.aclose()


async def test_a_second_resume_of_a_live_session_is_refused(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    loop = make_loop(ScriptedModel([text_response("ok")]), persistence=memory)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    other = make_loop(ScriptedModel([]), persistence=memory)
    with pytest.raises(SessionAlreadyOwnedError):
        await other.resume("s1")
    with pytest.raises(DuplicateAgentError, match="s1"):
        await loop.resume("s1")


async def test_resume_needs_persistence_a_session_and_a_route(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    bare = make_loop(ScriptedModel([]))
    with pytest.raises(PersistenceNotConfiguredError, match=r"'s1'.*not configured"):
        await bare.resume("s1")
    loop = make_loop(ScriptedModel([]), persistence=memory)
    with pytest.raises(SessionPersistenceNotFoundError):
        await loop.resume("missing")
    agent = await loop.create("s1", options=OPTIONS)
    agent.session.append("turn/start", {"turn": 1})
    agent.session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    await agent.aclose()
    with pytest.raises(ResumeOptionsError, match="pass options"):
        await loop.resume("s1")
    resumed = await loop.resume("s1", options=AgentOptions(provider="scripted", model="x"))
    assert resumed.options.model == "x"


async def test_session_start_sees_startup_then_resume(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    sources: list[tuple[str, str]] = []
    extensions = Extensions()

    def record(agent: Agent, source: str) -> None:
        sources.append((agent.id, source))

    extensions.session_start.add(record)
    loop = make_loop(
        ScriptedModel([text_response("ok")]), persistence=memory, extensions=extensions
    )
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    await agent.aclose()
    await loop.resume("s1")
    assert sources == [("s1", "startup"), ("s1", "resume")]


async def test_a_failing_session_start_leaves_no_session_behind(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    extensions = Extensions()

    def explode(agent: Agent, source: str) -> None:
        raise RuntimeError("setup failed")

    disposer = extensions.session_start.add(explode)
    loop = make_loop(ScriptedModel([]), persistence=memory, extensions=extensions)
    with pytest.raises(RuntimeError, match="setup failed"):
        await loop.create("s1", options=OPTIONS)
    assert "s1" not in memory.sessions
    assert loop.get("s1") is None
    disposer()
    assert (await loop.create("s1", options=OPTIONS)).id == "s1"


async def test_a_fork_is_seeded_from_the_parent_and_continues_its_turns(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    model = ScriptedModel([text_response("parent"), text_response("child")])
    loop = make_loop(model, persistence=memory)
    parent = await loop.create("parent", options=OPTIONS, cwd="/w", system="sys")
    parent.followup("first")
    await parent.wait_idle()
    child = await loop.fork(parent, session_id="child", origin="subagent", delegation_depth=1)
    header = child.session.header
    assert header.parent_session == "parent"
    assert header.is_seeded
    assert header.origin == "subagent"
    assert header.delegation_depth == 1
    assert header.cwd == "/w"
    inherited = child.session.inherited_event_count
    assert inherited == len(parent.session.events)
    assert child.session.events[inherited].type == "session/end-seed"
    child.followup("second")
    await child.wait_idle()
    assert data(of_type(child.session.events, "turn/start")[-1])["turn"] == 2
    headers = of_type(child.session.events, "request/header")
    assert data(headers[-1])["reason"] == "resume"
    assert len(model.requests[1].messages) == 3  # parent's two + the child's prompt
    assert memory.sessions["child"].inherited == inherited


async def test_a_fork_inside_an_open_turn_is_refused(make_loop: MakeLoop) -> None:
    loop = make_loop(ScriptedModel([]))
    parent = await loop.create("p", options=OPTIONS)
    parent.session.append("turn/start", {"turn": 1})
    with pytest.raises(SessionForkError) as caught:
        await loop.fork(parent, session_id="c")
    assert caught.value.code == "OPEN_TURN"


async def test_transient_failures_retry_in_the_same_step(make_loop: MakeLoop) -> None:
    delays: list[float] = []

    async def no_wait(seconds: float) -> None:
        delays.append(seconds)

    policy = RetryPolicy(sleep=no_wait, random=lambda: 0.0)
    model = ScriptedModel([failing("SERVER"), failing("RATE_LIMIT"), text_response("finally")])
    loop = make_loop(model, retry=policy)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    events = agent.session.events
    assert len(of_type(events, "step/start")) == 1
    retries = of_type(events, "llm/retry")
    assert [data(r)["retry"] for r in retries] == [1, 2]
    assert len({data(r)["retryId"] for r in retries}) == 1
    assert [data(r)["delayMs"] for r in retries] == [450, 900]
    assert delays == [0.45, 0.9]
    assert len(of_type(events, "llm/retry-started")) == 2
    message = of_type(events, "assistant/message")[0]
    last_chunks = [e.seq for e in of_type(events, "assistant/chunk")][-len(model.requests[-1:]) :]
    assert message.source_event_seqs is not None
    assert min(message.source_event_seqs) > of_type(events, "llm/retry-started")[-1].seq
    assert last_chunks
    assert data(events[-1])["reason"] == {"kind": "completed"}
    assert len(agent.session.derive_messages()) == 2


async def test_retries_stop_at_the_budget_and_on_codes_not_retried(make_loop: MakeLoop) -> None:
    policy = RetryPolicy(max_retries=2, initial_delay_ms=0, max_delay_ms=0)
    model = ScriptedModel([failing("SERVER")] * 3 + [failing("AUTH")])
    loop = make_loop(model, retry=policy)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    assert len(model.requests) == 3
    assert data(agent.session.events[-1])["reason"]["error"]["code"] == "SERVER"
    agent.followup("again")
    await agent.wait_idle()
    assert len(model.requests) == 4
    assert data(agent.session.events[-1])["reason"]["error"]["code"] == "AUTH"


async def test_a_retry_after_beyond_the_cap_is_not_retried(make_loop: MakeLoop) -> None:
    policy = RetryPolicy(max_delay_ms=1000)
    assert policy.delay_ms(1, 800) == 800
    assert policy.delay_ms(1, 5000) is None
    model = ScriptedModel([failing("RATE_LIMIT", retry_after_ms=60_000)])
    loop = make_loop(model, retry=policy)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    assert of_type(agent.session.events, "llm/retry") == []


async def test_cancel_beats_a_retry_wait(make_loop: MakeLoop) -> None:
    waiting = asyncio.Event()

    async def forever(seconds: float) -> None:
        waiting.set()
        await asyncio.Event().wait()

    model = ScriptedModel([failing("SERVER"), text_response("never")])
    loop = make_loop(model, retry=RetryPolicy(sleep=forever))
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await waiting.wait()
    agent.cancel()
    await agent.wait_idle()
    assert len(of_type(agent.session.events, "llm/retry")) == 1
    assert of_type(agent.session.events, "llm/retry-started") == []
    assert data(agent.session.events[-1])["reason"]["kind"] == "aborted"
    assert len(model.requests) == 1


async def test_request_error_listeners_decide_before_the_default_policy(
    make_loop: MakeLoop,
) -> None:
    extensions = Extensions()
    seen: list[RequestError] = []

    def decide(error: RequestError) -> Retry | Fail | None:
        seen.append(error)
        return Retry() if error.failure.code == "CUSTOM" else Fail()

    extensions.request_error.add(decide)
    model = ScriptedModel([failing("CUSTOM"), failing("SERVER")])
    loop = make_loop(model, extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    assert [e.attempt for e in seen] == [1, 2]
    assert data(agent.session.events[-1])["reason"]["error"]["code"] == "SERVER"
    assert of_type(agent.session.events, "llm/retry") == []  # Fail() kept the default out


async def test_a_loop_needs_a_model_for_the_route(make_loop: MakeLoop) -> None:
    loop = make_loop({"other": ScriptedModel([])})
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    reason = data(agent.session.events[-1])["reason"]
    assert reason["error"]["code"] == "NO_MODEL"
    assert "'scripted'" in reason["error"]["message"]


def test_the_loop_refuses_nonsense_settings() -> None:
    with pytest.raises(ValueError, match="max_parallel_tools"):
        AgentLoop(ScriptedModel([]), max_parallel_tools=0)
    with pytest.raises(ValueError, match="max_steps_per_turn"):
        AgentLoop(ScriptedModel([]), max_steps_per_turn=0)
    with pytest.raises(ValueError, match="unknown checkpoint"):
        FlushPolicy(points=["sometimes"])  # type: ignore[list-item]


async def test_resume_and_fork_keep_the_system_prompt_the_log_last_sent(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    model = ScriptedModel([text_response("one"), text_response("two"), text_response("three")])
    loop = make_loop(model, persistence=memory)
    agent = await loop.create("s1", options=OPTIONS, system="Be brief.")
    agent.followup("a")
    await agent.wait_idle()
    await agent.aclose()
    resumed = await loop.resume("s1")
    assert resumed.system == "Be brief."
    resumed.followup("b")
    await resumed.wait_idle()
    await resumed.aclose()
    child = await loop.fork("s1", session_id="c1")  # a stored parent
    assert child.system == "Be brief."
    child.followup("c")
    await child.wait_idle()
    assert [request.system for request in model.requests] == ["Be brief."] * 3


async def test_a_cancel_during_an_append_never_sends_the_batch_twice(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    model = ScriptedModel([text_response("never asked"), text_response("second turn")])
    loop = make_loop(model, persistence=memory)
    agent = await loop.create("s1", options=OPTIONS)
    memory.append_gate = asyncio.Event()
    agent.followup("first")
    await memory.append_entered.wait()  # the before-request flush is appending
    agent.cancel()
    memory.append_gate.set()  # the started write completes after the cancel
    await agent.wait_idle()
    assert data(agent.session.events[-1])["reason"]["kind"] == "aborted"
    agent.followup("again")
    await agent.wait_idle()
    assert data(agent.session.events[-1])["reason"] == {"kind": "completed"}
    await agent.aclose()
    stored = memory.sessions["s1"].events
    assert [encode_event(e) for e in stored] == [encode_event(e) for e in agent.session.events]


async def test_a_checkpoint_policy_that_raises_fails_the_tool_closed(make_loop: MakeLoop) -> None:
    class Broken:
        async def checkpoint(self, point: str, agent: Any, flush: Any) -> None:
            if point == "before-tool":
                raise ValueError("policy bug")

    memory = MemoryPersistence()
    model = ScriptedModel([tool_call_response(("c1", "echo", echo_args("a"))), text_response("x")])
    loop = make_loop(model, persistence=memory, checkpoints=Broken())
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    result = of_type(agent.session.events, "tool/result")[0]
    assert data(result)["error"]["code"] == "CHECKPOINT_FAILED"
    assert "policy bug" in flat(result)["content"][0]["text"]
    assert data(agent.session.events[-1])["reason"]["error"]["code"] == "CHECKPOINT_FAILED"


async def test_a_steer_that_meets_the_step_limit_runs_in_the_next_turn(
    make_loop: MakeLoop, echo: EchoTool
) -> None:
    model = ScriptedModel(
        [
            tool_call_response(("c1", "echo", echo_args("slow", wait=True))),
            text_response("the steer, answered"),
        ]
    )
    loop = make_loop(model, max_steps_per_turn=1)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await echo.started.wait()
    agent.steer("do not lose me")
    echo.release.set()
    await agent.wait_idle()
    ends = [data(e)["reason"] for e in of_type(agent.session.events, "turn/end")]
    assert ends[0]["error"]["code"] == "MAX_STEPS"
    assert ends[1] == {"kind": "completed"}
    texts = [data(e)["content"][0]["text"] for e in of_type(agent.session.events, "user/message")]
    assert texts == ["go", "do not lose me"]


async def test_a_logged_config_that_cannot_be_used_is_named_on_resume(
    make_loop: MakeLoop, memory: MemoryPersistence
) -> None:
    loop = make_loop(ScriptedModel([]), persistence=memory)
    agent = await loop.create("s1", options=OPTIONS)
    agent.session.append("turn/start", {"turn": 1})
    config = {"provider": "scripted", "model": "demo", "temperature": "0.2"}
    agent.session.append("request/header", {"header": {"config": config}, "reason": "initial"})
    agent.session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    await agent.aclose()
    with pytest.raises(LoggedConfigError, match=r"'s1'.*temperature"):
        await loop.resume("s1")
