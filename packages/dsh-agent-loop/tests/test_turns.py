"""The turn/step algorithm and its durable event order (reference §6.3)."""

from __future__ import annotations

import uuid

from dsh_agent_loop import request_from_log
from dsh_llm import TextBlock, ToolResultMessage, Usage, UsageChunk, UserMessage
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_session import encode_header_line
from loop_support import OPTIONS, EchoTool, MakeLoop, data, echo_args, flat, kinds, of_type


async def test_a_simple_turn_logs_its_events_in_order(make_loop: MakeLoop) -> None:
    model = ScriptedModel([text_response("Hello there.")])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS, system="Be brief.")
    agent.followup("hi")
    await agent.wait_idle()

    events = agent.session.events
    assert kinds(events) == [
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        "request/context",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert data(events[0]) == {"turn": 1}  # no trigger: a restore would drop it (issue 13)
    user = data(of_type(events, "user/message")[0])
    assert user == {  # the identified shape the harness writes since 2026-07-28, in its key order
        "content": [{"type": "text", "text": "hi"}],
        "source": {"kind": "user"},
        "role": "user",
        "id": user["id"],
    }
    assert list(user) == ["content", "source", "role", "id"]
    assert uuid.UUID(user["id"]).version == 4
    header = data(of_type(events, "request/header")[0])
    assert header["reason"] == "initial"
    assert header["header"]["config"] == {"provider": "scripted", "model": "demo"}
    assert header["header"]["system"] == "Be brief."
    assert "messagePrefix" not in header["header"]
    assert data(of_type(events, "request/context")[0]) == {"provider": "scripted", "model": "demo"}
    message = of_type(events, "assistant/message")[0]
    chunk_seqs = [e.seq for e in of_type(events, "assistant/chunk")]
    assert message.source_event_seqs == tuple(chunk_seqs)
    wrapped = data(message)["message"]
    assert data(message) == {
        "turn": 1,
        "step": 1,
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "Hello there."}],
            "source": {"kind": "model", "provider": "scripted", "model": "demo"},
            "id": wrapped["id"],
        },
        "usage": {"inputTokens": 10, "outputTokens": 12},
    }
    assert list(wrapped) == ["role", "content", "source", "id"]
    assert uuid.UUID(wrapped["id"]).version == 4
    assert wrapped["id"] != user["id"]
    assert data(events[-1]) == {"turn": 1, "reason": {"kind": "completed"}}
    assert [m.to_wire() for m in agent.session.derive_messages()][1]["content"] == [
        {"type": "text", "text": "Hello there."}
    ]
    assert agent.status == "idle"


async def test_a_tool_round_trip_takes_two_steps_and_one_header(
    make_loop: MakeLoop, echo: EchoTool
) -> None:
    model = ScriptedModel(
        [tool_call_response(("c1", "echo", echo_args("ping"))), text_response("It said ping.")]
    )
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("call echo")
    await agent.wait_idle()

    assert kinds(agent.session.events) == [
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        "request/context",
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    call = of_type(agent.session.events, "tool/call")[0]
    result = of_type(agent.session.events, "tool/result")[0]
    assert data(call) == {
        "turn": 1,
        "step": 1,
        "callId": "c1",
        "name": "echo",
        "arguments": echo_args("ping"),
    }
    message = data(result)["message"]
    assert data(result) == {
        "turn": 1,
        "step": 1,
        "message": {
            "source": {"kind": "tool", "callId": "c1"},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "content": [{"type": "text", "text": "echo: ping"}],
                    "isError": False,
                }
            ],
            "role": "user",
            "id": message["id"],
        },
    }
    assert list(message) == ["source", "content", "role", "id"]
    assert result.source_event_seqs == (call.seq,)
    assert echo.calls == ["ping"]
    second = model.requests[1]
    tool_results = [m for m in second.messages if isinstance(m, ToolResultMessage)]
    assert len(tool_results) == 1
    assert tool_results[0].result.tool_call_id == "c1"
    assert [e.type for e in agent.session.events].count("request/header") == 1


async def test_one_send_is_one_turn_even_in_a_burst(make_loop: MakeLoop) -> None:
    model = ScriptedModel([text_response("one"), text_response("two"), text_response("three")])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("a")
    agent.followup("b")
    agent.followup("c")
    await agent.wait_idle()

    starts = [data(e)["turn"] for e in of_type(agent.session.events, "turn/start")]
    assert starts == [1, 2, 3]
    entered = [data(e)["content"][0]["text"] for e in of_type(agent.session.events, "user/message")]
    assert entered == ["a", "b", "c"]
    assert [len(r.messages) for r in model.requests] == [1, 3, 5]


async def test_steering_enters_at_the_next_step(make_loop: MakeLoop, echo: EchoTool) -> None:
    model = ScriptedModel(
        [
            tool_call_response(("c1", "echo", echo_args("slow", wait=True))),
            text_response("steered"),
        ]
    )
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("start")
    await echo.started.wait()
    agent.steer("also this")
    echo.release.set()
    await agent.wait_idle()

    events = agent.session.events
    assert len(of_type(events, "turn/start")) == 1
    users = of_type(events, "user/message")
    assert [data(u)["content"][0]["text"] for u in users] == ["start", "also this"]
    second_step = [e.seq for e in events if e.type == "step/start"][1]
    assert users[1].seq == second_step + 1
    last_user = model.requests[1].messages[-1]
    assert isinstance(last_user, UserMessage)
    assert last_user.content == [TextBlock(text="also this")]


async def test_an_idle_inject_waits_for_the_next_wake(make_loop: MakeLoop) -> None:
    model = ScriptedModel([text_response("ok")])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    agent.inject("context first")
    await agent.wait_idle()
    assert len(agent.session.events) == 0  # staged: no turn
    agent.followup("now go")
    await agent.wait_idle()
    entered = [data(e)["content"][0]["text"] for e in of_type(agent.session.events, "user/message")]
    assert entered == ["context first", "now go"]
    assert len(of_type(agent.session.events, "turn/start")) == 1


async def test_max_tokens_ends_the_turn_without_running_tools(
    make_loop: MakeLoop, echo: EchoTool
) -> None:
    cut = tool_call_response(("c1", "echo", echo_args("x")))
    cut[-1] = cut[-1].model_copy(
        update={"reason": cut[-1].reason.model_copy(update={"kind": "max-tokens"})}
    )  # type: ignore[attr-defined]
    model = ScriptedModel([cut])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()

    assert echo.calls == []
    assert data(agent.session.events[-1])["reason"] == {"kind": "max-tokens"}
    result = of_type(agent.session.events, "tool/result")[0]
    assert data(result)["error"]["code"] == "TRUNCATED_TOOL_CALL"
    assert flat(result)["isError"] is True


async def test_an_empty_completion_is_logged_but_not_derived(make_loop: MakeLoop) -> None:
    model = ScriptedModel(
        [text_response("", usage=Usage(input_tokens=3, output_tokens=0)), text_response("ok")]
    )
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("say nothing")
    await agent.wait_idle()
    messages = of_type(agent.session.events, "assistant/message")
    assert len(messages) == 1
    assert flat(messages[0])["content"] == []
    assert len(agent.session.derive_messages()) == 1  # the user message only
    agent.followup("and now?")
    await agent.wait_idle()
    assert [m.role for m in model.requests[1].messages] == ["user", "user"]


async def test_model_failures_end_the_turn_with_their_code(make_loop: MakeLoop) -> None:
    model = ScriptedModel([])  # exhausted at once: the adapter raises
    loop = make_loop(model, retry=None)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    reason = data(agent.session.events[-1])["reason"]
    assert reason["kind"] == "error"
    assert reason["error"]["code"] == "UNKNOWN"
    assert "ScriptExhaustedError" in reason["error"]["message"]
    assert kinds(agent.session.events)[-2:] == ["step/end", "turn/end"]
    # the failed call's synthetic finish is in the log, and nothing reached the history
    finish = of_type(agent.session.events, "assistant/chunk")[-1]
    assert data(finish)["chunk"]["type"] == "finish"
    assert len(agent.session.derive_messages()) == 1


async def test_the_agent_keeps_working_after_a_failed_turn(make_loop: MakeLoop) -> None:
    model = ScriptedModel([])
    loop = make_loop(model, retry=None)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("fails")
    await agent.wait_idle()
    model.add(text_response("works"))
    agent.followup("again")
    await agent.wait_idle()
    assert data(agent.session.events[-1])["reason"] == {"kind": "completed"}
    assert data(agent.session.events[-1])["turn"] == 2


async def test_the_log_alone_rebuilds_the_last_request(make_loop: MakeLoop) -> None:
    model = ScriptedModel(
        [tool_call_response(("c1", "echo", echo_args("a"))), text_response("done")]
    )
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS, system="sys")
    agent.followup("go")
    await agent.wait_idle()
    # after the turn the derived history has grown by the answer; rebuild from the prefix the
    # last request saw: everything before its step's assistant message.
    rebuilt = request_from_log(agent.session)
    assert rebuilt.system == "sys"
    assert rebuilt.messages[: len(model.requests[-1].messages)] == model.requests[-1].messages
    assert rebuilt.tools == model.requests[-1].tools


async def test_maintenance_holds_an_idle_agent_and_starts_queued_turns_after(
    make_loop: MakeLoop,
) -> None:
    import asyncio

    import pytest

    from dsh_agent_loop import AgentBusyError

    model = ScriptedModel([text_response("one"), text_response("two")])
    loop = make_loop(model)
    agent = await loop.create("held", options=OPTIONS)
    async with agent.maintenance():
        agent.followup("first")  # queued, not started: the agent is held
        agent.followup("second")
        await asyncio.sleep(0)
        assert agent.status == "idle"
        assert kinds(agent.session.events) == []
        waiter = asyncio.ensure_future(agent.wait_idle())
        await asyncio.sleep(0)
        assert not waiter.done()  # wait_idle waits for the maintenance too
        with pytest.raises(AgentBusyError, match="other maintenance"):
            async with agent.maintenance():
                pass
    await waiter
    await agent.wait_idle()
    prompts = [data(e)["content"][0]["text"] for e in of_type(agent.session.events, "user/message")]
    assert prompts == ["first", "second"]  # FIFO, one turn each, after the hold
    assert len(of_type(agent.session.events, "turn/start")) == 2


async def test_maintenance_refuses_a_running_or_woken_agent(make_loop: MakeLoop) -> None:
    import asyncio

    import pytest

    from dsh_agent_loop import AgentBusyError
    from dsh_llm.testing import Hang

    loop = make_loop(ScriptedModel([Hang()]))
    agent = await loop.create("busy", options=OPTIONS)
    agent.followup("work")
    with pytest.raises(AgentBusyError, match="turn is running"):
        async with agent.maintenance():
            pass
    await asyncio.sleep(0)
    agent.cancel()
    await agent.wait_idle()
    await agent.aclose()
    with pytest.raises(AgentBusyError, match="closing"):
        async with agent.maintenance():
            pass


async def test_a_step_whose_server_reported_no_usage_has_no_usage_and_no_new_event(
    make_loop: MakeLoop,
) -> None:
    """Some servers never send usage (llama-cpp-python's streams): the step's
    ``assistant/message`` then has no ``usage``, which is how the log says so; no event type
    outside format v0's inventory is written (the TypeScript harness refuses one)."""
    silent = [c for c in text_response("No counts.") if not isinstance(c, UsageChunk)]
    model = ScriptedModel([silent, text_response("Counted.")])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("first")
    await agent.wait_idle()
    agent.followup("second")
    await agent.wait_idle()

    events = agent.session.events
    first, second = of_type(events, "assistant/message")
    assert "usage" not in data(first)
    assert data(second)["usage"] == {"inputTokens": 10, "outputTokens": 8}
    assert events[first.seq + 1].type == "step/end"


async def test_every_created_header_carries_its_delegation_depth(make_loop: MakeLoop) -> None:
    """The TypeScript harness refuses a header without ``delegationDepth`` ("first line is not a
    session header"); a top-level session is written with 0, a fork with its own depth."""
    loop = make_loop(ScriptedModel([text_response("Hi.")]))
    agent = await loop.create("s1", options=OPTIONS)
    assert agent.session.header.delegation_depth == 0
    assert b'"delegationDepth":0' in encode_header_line(agent.session.header)
    agent.followup("hi")
    await agent.wait_idle()
    child = await loop.fork(agent, session_id="s2")
    assert child.session.header.delegation_depth == 0
    deeper = await loop.create("s3", options=OPTIONS, parent_session="s1", delegation_depth=2)
    assert deeper.session.header.delegation_depth == 2


def test_the_loops_errors_share_one_base_and_closed_is_the_seams() -> None:
    from dsh_agent import AgentClosedError
    from dsh_agent_loop import AgentLoopError, LoopClosedError, ModelFailedError
    from dsh_llm import FailureCode, LlmFailure

    failure = LlmFailure(message="slow down", code=FailureCode.RATE_LIMIT)
    error = ModelFailedError("s1", failure)
    assert isinstance(error, AgentLoopError)
    assert (error.session_id, error.code, error.failure) == ("s1", "MODEL_FAILED", failure)
    assert "RATE_LIMIT: slow down" in str(error)
    assert issubclass(LoopClosedError, AgentClosedError)
    assert issubclass(LoopClosedError, AgentLoopError)
