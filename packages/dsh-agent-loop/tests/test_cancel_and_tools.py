"""Cancellation in every window, and tool scheduling (pool, barriers, model-order commits)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from dsh_agent import CancelCause, Extensions, StepContext, TurnStopping
from dsh_llm import BlockStartChunk, TextDeltaChunk
from dsh_llm.testing import Hang, ScriptedModel, text_response, tool_call_response
from loop_support import OPTIONS, EchoTool, MakeLoop, data, echo_args, flat, kinds, of_type


async def followup_and_wait_for_the_request(agent: Any, text: str) -> None:
    """Send ``text`` and return once the turn's request is logged (the model is being asked)."""
    logged = asyncio.Event()
    agent.session.subscribe(lambda e: logged.set() if e.type == "request/context" else None)
    agent.followup(text)
    await logged.wait()


def results_by_call(events: Any) -> dict[str, Any]:
    return {flat(e)["callId"]: flat(e) for e in of_type(events, "tool/result")}


async def test_an_idle_cancel_is_a_no_op(make_loop: MakeLoop) -> None:
    loop = make_loop(ScriptedModel([]))
    agent = await loop.create("s1", options=OPTIONS)
    agent.cancel()
    await agent.wait_idle()
    assert len(agent.session.events) == 0
    assert agent.status == "idle"


async def test_a_cancel_mid_stream_keeps_the_streamed_text_as_interrupted(
    make_loop: MakeLoop,
) -> None:
    partial = [BlockStartChunk(index=0, block_type="text"), TextDeltaChunk(index=0, text="Hal")]
    model = ScriptedModel([Hang(before=partial)])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    seen = asyncio.Event()
    agent.session.subscribe(
        lambda e: seen.set() if e.type == "assistant/chunk" and "text" in data(e)["chunk"] else None
    )
    agent.followup("go")
    await seen.wait()
    agent.cancel(CancelCause("hook", "stop hook said so"))
    await agent.wait_idle()
    message = of_type(agent.session.events, "assistant/message")[0]
    assert flat(message)["content"] == [{"type": "text", "text": "Hal"}]
    assert data(message)["interrupted"] is True
    assert message.source_event_seqs == tuple(
        e.seq for e in of_type(agent.session.events, "assistant/chunk")
    )
    assert kinds(agent.session.events)[-2:] == ["step/end", "turn/end"]
    assert data(agent.session.events[-1])["reason"] == {
        "kind": "aborted",
        "reason": {"kind": "hook", "reason": "stop hook said so"},
    }


async def test_a_cancel_mid_stream_drops_half_streamed_tool_calls(make_loop: MakeLoop) -> None:
    call = tool_call_response(("c1", "echo", echo_args("x")))
    model = ScriptedModel([Hang(before=call[:2])])  # block-start + first arguments delta
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    seen = asyncio.Event()
    agent.session.subscribe(lambda e: seen.set() if e.type == "assistant/chunk" else None)
    agent.followup("go")
    await seen.wait()
    await asyncio.sleep(0)
    agent.cancel()
    await agent.wait_idle()
    assert of_type(agent.session.events, "assistant/message") == []
    assert of_type(agent.session.events, "tool/call") == []


async def test_a_cancel_during_a_tool_drains_it_and_skips_the_rest(
    make_loop: MakeLoop, echo: EchoTool
) -> None:
    model = ScriptedModel(
        [
            tool_call_response(
                ("c1", "echo", echo_args("blocking", wait=True)),
                ("c2", "echo", echo_args("never")),
                ("c3", "echo", echo_args("never either")),
            )
        ]
    )
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await echo.started.wait()
    agent.cancel()
    await agent.wait_idle()

    results = results_by_call(agent.session.events)
    assert results["c1"]["error"]["code"] == "ABORTED"
    assert results["c2"]["error"]["code"] == "ABORTED_BEFORE_DISPATCH"
    assert results["c3"]["error"]["code"] == "ABORTED_BEFORE_DISPATCH"
    assert results["c2"]["content"] == [
        {"type": "text", "text": "Error: tool call aborted before dispatch"}
    ]
    assert echo.calls == ["blocking"]
    calls = [data(e)["callId"] for e in of_type(agent.session.events, "tool/call")]
    assert calls == ["c1", "c2", "c3"]
    assert data(agent.session.events[-1])["reason"]["kind"] == "aborted"
    # every call in the derived history has its result: the next request is provider-valid
    model.add(text_response("ok"))
    agent.followup("again")
    await agent.wait_idle()
    assert data(agent.session.events[-1])["reason"] == {"kind": "completed"}


async def test_cancel_drops_the_inbox_unless_asked_to_keep_it(make_loop: MakeLoop) -> None:
    model = ScriptedModel([Hang(), text_response("later"), text_response("woken")])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    await followup_and_wait_for_the_request(agent, "first")
    agent.followup("queued")
    agent.cancel(keep_inbox=True)
    await agent.wait_idle()
    assert len(of_type(agent.session.events, "turn/start")) == 1  # kept, but not woken
    assert len(agent.inbox) == 1
    agent.followup("wake")
    await agent.wait_idle()
    entered = [data(e)["content"][0]["text"] for e in of_type(agent.session.events, "user/message")]
    assert entered == ["first", "queued", "wake"]  # one send, one turn
    turn_ends = [data(e)["reason"]["kind"] for e in of_type(agent.session.events, "turn/end")]
    assert turn_ends == ["aborted", "completed", "completed"]


async def test_a_waking_send_during_an_abort_runs_in_the_next_turn(make_loop: MakeLoop) -> None:
    model = ScriptedModel([Hang(), text_response("fresh")])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    await followup_and_wait_for_the_request(agent, "first")
    agent.cancel()
    agent.steer("after the cancel")
    await agent.wait_idle()
    turn_ends = [data(e)["reason"]["kind"] for e in of_type(agent.session.events, "turn/end")]
    assert turn_ends == ["aborted", "completed"]
    last_user = of_type(agent.session.events, "user/message")[-1]
    assert data(last_user)["content"][0]["text"] == "after the cancel"


async def test_the_first_cancel_cause_wins(make_loop: MakeLoop) -> None:
    model = ScriptedModel([Hang()])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    await followup_and_wait_for_the_request(agent, "go")
    agent.cancel(CancelCause("parent"))
    agent.cancel(CancelCause("user"))
    await agent.wait_idle()
    assert data(agent.session.events[-1])["reason"] == {
        "kind": "aborted",
        "reason": {"kind": "parent"},
    }


async def test_disposing_a_running_agent_ends_its_turn_disposed(make_loop: MakeLoop) -> None:
    model = ScriptedModel([Hang()])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    await followup_and_wait_for_the_request(agent, "go")
    await agent.aclose()
    assert data(agent.session.events[-1])["reason"] == {
        "kind": "aborted",
        "reason": {"kind": "disposed"},
    }
    assert loop.get("s1") is None


async def test_a_cancel_in_pre_step_ends_the_turn_without_a_step(make_loop: MakeLoop) -> None:
    extensions = Extensions()

    def cancel_now(step: StepContext, decision: Any) -> None:
        step.agent.cancel()

    extensions.pre_step.add(cancel_now)
    loop = make_loop(ScriptedModel([]), extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    assert kinds(agent.session.events) == ["turn/start", "turn/end"]
    assert data(agent.session.events[-1])["reason"]["kind"] == "aborted"


async def test_parallel_calls_overlap_and_commit_in_model_order(
    make_loop: MakeLoop, echo: EchoTool
) -> None:
    calls = [(f"c{i}", "echo", echo_args(f"p{i}", parallel=True, wait=True)) for i in range(4)]
    model = ScriptedModel([tool_call_response(*calls), text_response("done")])
    loop = make_loop(model, max_parallel_tools=3)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    while echo.running < 3:  # noqa: ASYNC110 - the pool has no event to wait on; bounded by the test
        await asyncio.sleep(0)
    assert echo.running == 3  # the pool is full; the fourth waits for a free slot
    echo.release.set()
    await agent.wait_idle()
    assert echo.max_running == 3
    results = [flat(e)["callId"] for e in of_type(agent.session.events, "tool/result")]
    assert results == ["c0", "c1", "c2", "c3"]
    for result in of_type(agent.session.events, "tool/result"):
        (call_seq,) = result.source_event_seqs or ()
        assert data(agent.session.events[call_seq])["callId"] == flat(result)["callId"]


async def test_an_unsafe_call_runs_alone_as_a_barrier(make_loop: MakeLoop, echo: EchoTool) -> None:
    calls = [
        ("c0", "echo", echo_args("a", parallel=True)),
        ("c1", "echo", echo_args("b", parallel=True)),
        ("c2", "echo", echo_args("barrier")),
        ("c3", "echo", echo_args("d", parallel=True)),
    ]
    order: list[str] = []
    original = echo.execute

    async def tracking(args: Any, execution: Any) -> str:
        order.append(f"start {args.text}")
        result = await original(args, execution)
        order.append(f"end {args.text}")
        return result

    echo.execute = tracking  # type: ignore[method-assign]
    model = ScriptedModel([tool_call_response(*calls), text_response("done")])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    barrier_start = order.index("start barrier")
    assert {"end a", "end b"} <= set(order[:barrier_start])
    assert order[barrier_start + 1] == "end barrier"
    assert order[-2:] == ["start d", "end d"]
    assert echo.max_running == 2


async def test_a_serial_pool_of_one_never_overlaps(make_loop: MakeLoop, echo: EchoTool) -> None:
    calls = [(f"c{i}", "echo", echo_args(f"p{i}", parallel=True)) for i in range(3)]
    model = ScriptedModel([tool_call_response(*calls), text_response("done")])
    loop = make_loop(model, max_parallel_tools=1)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    assert echo.max_running == 1
    assert echo.calls == ["p0", "p1", "p2"]


async def test_unknown_tools_and_bad_arguments_become_error_results(make_loop: MakeLoop) -> None:
    model = ScriptedModel(
        [
            tool_call_response(("c1", "nope", "{}"), ("c2", "echo", json.dumps({"wrong": 1}))),
            text_response("done"),
        ]
    )
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    results = results_by_call(agent.session.events)
    assert results["c1"]["error"]["code"] == "UNKNOWN_TOOL"
    assert results["c2"]["error"]["code"] == "INVALID_ARGS"
    assert data(agent.session.events[-1])["reason"] == {"kind": "completed"}


async def test_turn_stopping_may_steer_another_step(make_loop: MakeLoop) -> None:
    extensions = Extensions()
    seen: list[dict[str, Any]] = []

    def stop_hook(stopping: TurnStopping) -> None:
        seen.append(stopping.reason)
        if len(seen) == 1:
            stopping.agent.steer("continue: blocked by Stop hook")

    extensions.turn_stopping.add(stop_hook)
    model = ScriptedModel([text_response("first"), text_response("second")])
    loop = make_loop(model, extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    assert seen == [{"kind": "completed"}, {"kind": "completed"}]
    assert len(of_type(agent.session.events, "step/start")) == 2
    assert len(of_type(agent.session.events, "turn/start")) == 1


async def test_max_steps_per_turn_stops_a_runaway_turn(make_loop: MakeLoop) -> None:
    model = ScriptedModel(
        [tool_call_response((f"c{i}", "echo", echo_args("again"))) for i in range(5)]
    )
    loop = make_loop(model, max_steps_per_turn=3)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("loop forever")
    await agent.wait_idle()
    assert len(of_type(agent.session.events, "step/start")) == 3
    reason = data(agent.session.events[-1])["reason"]
    assert reason["kind"] == "error"
    assert reason["error"]["code"] == "MAX_STEPS"
    assert "3 steps" in reason["error"]["message"]


async def test_tool_output_listeners_hear_running_calls_and_nothing_of_it_is_logged(
    make_loop: MakeLoop,
) -> None:
    extensions = Extensions()
    heard: list[tuple[str, str]] = []

    def broken(execution: Any, text: str) -> None:
        raise RuntimeError("a display that fails")

    extensions.tool_output.add(broken)
    extensions.tool_output.add(lambda execution, text: heard.append((execution.call_id, text)))
    model = ScriptedModel(
        [
            tool_call_response(("c1", "echo", echo_args("a")), ("c2", "echo", echo_args("b"))),
            text_response("done"),
        ]
    )
    loop = make_loop(model, extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    assert heard == [("c1", "working on a\n"), ("c2", "working on b\n")]
    assert sorted(results_by_call(agent.session.events)) == ["c1", "c2"]
    logged = json.dumps([e.data for e in agent.session.events], default=str)
    assert "working on" not in logged
