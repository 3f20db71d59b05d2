"""The session prefix (seed 004), request headers, request listeners, and the invariant."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from dsh_agent import Agent, Extensions, PrefixNext, RequestConfig, StepContext
from dsh_agent_loop import AgentLoop, RequestInvariantError, check_request, request_from_log
from dsh_llm import Message, PluginSource, UserMessage
from dsh_llm.testing import HANG, ScriptedModel, text_response, tool_call_response
from loop_support import OPTIONS, MakeLoop, data, echo_args, of_type


def plugin_message(text: str, plugin: str) -> UserMessage:
    return UserMessage.from_text(text, source=PluginSource(plugin=plugin, form="snapshot"))


def contributing(text: str, plugin: str, counter: list[str] | None = None) -> Any:
    async def listener(agent: Agent, next_: PrefixNext) -> Sequence[Message]:
        if counter is not None:
            counter.append(plugin)
        return [plugin_message(text, plugin), *await next_()]

    return listener


async def test_the_prefix_is_composed_once_and_fronts_every_request(make_loop: MakeLoop) -> None:
    composed: list[str] = []
    extensions = Extensions()
    extensions.session_prefix.add(contributing("<skills>review</skills>", "skills", composed))
    model = ScriptedModel(
        [
            tool_call_response(("c1", "echo", echo_args("a"))),
            tool_call_response(("c2", "echo", echo_args("b"))),
            text_response("done"),
        ]
    )
    loop = make_loop(model, extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()

    assert composed == ["skills"]
    assert len(model.requests) == 3
    for request in model.requests:
        first = request.messages[0]
        assert isinstance(first, UserMessage)
        assert first.content[0].text == "<skills>review</skills>"  # type: ignore[union-attr]
    headers = of_type(agent.session.events, "request/header")
    assert len(headers) == 1
    prefix = data(headers[0])["header"]["messagePrefix"]
    assert prefix == [plugin_message("<skills>review</skills>", "skills").to_wire()]
    derived = agent.session.derive_messages()
    assert all(
        not (isinstance(m, UserMessage) and isinstance(m.source, PluginSource)) for m in derived
    )


async def test_prefix_contributions_go_on_the_wire_in_registration_order(
    make_loop: MakeLoop,
) -> None:
    extensions = Extensions()
    extensions.session_prefix.add(contributing("first", "a"))
    extensions.session_prefix.add(contributing("second", "b"))
    model = ScriptedModel([text_response("ok")])
    loop = make_loop(model, extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    texts = [m.content[0].text for m in model.requests[0].messages]  # type: ignore[union-attr]
    assert texts == ["first", "second", "go"]


async def test_an_empty_prefix_leaves_no_key_in_the_header(make_loop: MakeLoop) -> None:
    extensions = Extensions()

    async def nothing(agent: Agent, next_: PrefixNext) -> Sequence[Message]:
        return [*await next_()]

    extensions.session_prefix.add(nothing)
    model = ScriptedModel([text_response("ok")])
    loop = make_loop(model, extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    header = data(of_type(agent.session.events, "request/header")[0])["header"]
    assert "messagePrefix" not in header
    assert len(model.requests[0].messages) == 1


async def test_a_cancelled_composition_is_discarded_and_recomposed(make_loop: MakeLoop) -> None:
    calls: list[int] = []
    entered = asyncio.Event()
    extensions = Extensions()

    async def slow_then_fast(agent: Agent, next_: PrefixNext) -> Sequence[Message]:
        calls.append(len(calls))
        if len(calls) == 1:
            entered.set()
            await asyncio.Event().wait()  # only a cancel ends the first composition
        return [plugin_message("fresh", "p"), *await next_()]

    extensions.session_prefix.add(slow_then_fast)
    model = ScriptedModel([text_response("ok")])
    loop = make_loop(model, extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("first")
    await entered.wait()
    agent.cancel()
    await agent.wait_idle()
    events = agent.session.events
    assert [e.type for e in events] == ["turn/start", "turn/end"]
    assert data(events[1])["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}
    agent.followup("second")
    await agent.wait_idle()
    assert calls == [0, 1]
    header = data(of_type(agent.session.events, "request/header")[0])["header"]
    assert header["messagePrefix"][0]["content"][0]["text"] == "fresh"


async def test_a_prefix_listener_that_returns_junk_fails_the_turn(make_loop: MakeLoop) -> None:
    extensions = Extensions()

    async def junk(agent: Agent, next_: PrefixNext) -> Any:
        return "not a list"

    extensions.session_prefix.add(junk)
    loop = make_loop(ScriptedModel([]), extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    reason = data(agent.session.events[-1])["reason"]
    assert reason["kind"] == "error"
    assert "TypeError" in reason["error"]["message"]


async def test_a_request_listener_switches_model_and_logs_a_change(make_loop: MakeLoop) -> None:
    extensions = Extensions()

    def second_step_uses_big(step: StepContext, config: RequestConfig) -> RequestConfig | None:
        if step.step == 2:
            return config.model_copy(update={"model": "big", "temperature": 0.5})
        return None

    extensions.request.add(second_step_uses_big)
    model = ScriptedModel(
        [tool_call_response(("c1", "echo", echo_args("a"))), text_response("done")]
    )
    loop = make_loop(model, extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await agent.wait_idle()
    headers = of_type(agent.session.events, "request/header")
    assert [data(h)["reason"] for h in headers] == ["initial", "change"]
    assert data(headers[1])["header"]["config"] == {
        "provider": "scripted",
        "model": "big",
        "temperature": 0.5,
    }
    contexts = of_type(agent.session.events, "request/context")
    assert [data(c)["model"] for c in contexts] == ["demo", "big"]
    assert model.requests[1].model == "big"
    assert model.requests[1].sampling.temperature == 0.5


async def test_a_stable_header_is_logged_once_across_turns(make_loop: MakeLoop) -> None:
    model = ScriptedModel([text_response("one"), text_response("two")])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS, system="same")
    agent.followup("a")
    agent.followup("b")
    await agent.wait_idle()
    assert len(of_type(agent.session.events, "request/header")) == 1
    assert len(of_type(agent.session.events, "request/context")) == 1


async def test_every_request_rebuilds_byte_equal_from_the_log(make_loop: MakeLoop) -> None:
    """THEOREM: what the model received equals what the log prefix before it rebuilds."""
    extensions = Extensions()
    extensions.session_prefix.add(contributing("catalog", "skills"))
    snapshots: list[str] = []

    def model_sees(request: Any) -> Any:
        snapshots.append(request.model_dump_json())
        return (
            text_response("done")
            if len(snapshots) == 3
            else tool_call_response((f"c{len(snapshots)}", "echo", echo_args("x")))
        )

    model = ScriptedModel([model_sees, model_sees, model_sees])
    loop = make_loop(model, extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS, system="sys")
    rebuilt: list[str] = []

    def on_event(event: Any) -> None:
        chunk = data(event).get("chunk", {}) if event.type == "assistant/chunk" else {}
        if chunk.get("type") == "block-start" and len(rebuilt) < len(snapshots):
            rebuilt.append(request_from_log(agent.session).model_dump_json())

    agent.session.subscribe(on_event)
    agent.followup("go")
    await agent.wait_idle()
    assert len(snapshots) == 3
    assert rebuilt == snapshots


async def test_the_invariant_refuses_a_request_the_log_cannot_explain(
    make_loop: MakeLoop,
) -> None:
    model = ScriptedModel([text_response("never sent")])
    loop = make_loop(model, expect_invariant_failures=True)
    agent = await loop.create("s1", options=OPTIONS)
    original = agent.builder.build

    async def smuggling_build(*args: Any, **kwargs: Any) -> Any:
        request, config = await original(*args, **kwargs)
        extra = UserMessage.from_text("not in the log")
        return request.model_copy(update={"messages": [*request.messages, extra]}), config

    agent.builder.build = smuggling_build  # type: ignore[method-assign]
    agent.followup("go")
    await agent.wait_idle()
    reason = data(agent.session.events[-1])["reason"]
    assert reason["kind"] == "error"
    assert reason["error"]["code"] == "REQUEST_INVARIANT"
    assert model.requests == []  # the model was never called
    assert len(loop.invariant_failures) == 1
    assert isinstance(loop.invariant_failures[0], RequestInvariantError)


async def test_check_request_needs_an_open_step_and_a_header(make_loop: MakeLoop) -> None:
    loop = AgentLoop(ScriptedModel([]))
    agent = await loop.create("s1", options=OPTIONS)
    request = request_for_nothing()
    with pytest.raises(RequestInvariantError, match="no step is open"):
        check_request(agent.session, request)
    agent.session.append("turn/start", {"turn": 1})
    agent.session.append("step/start", {"turn": 1, "step": 1})
    with pytest.raises(RequestInvariantError, match="no request/header"):
        check_request(agent.session, request)
    await loop.aclose()


def request_for_nothing() -> Any:
    from dsh_llm import ModelRequest

    return ModelRequest(provider="scripted", model="demo")


async def test_a_hanging_model_is_cancelled_with_nothing_logged_as_an_answer(
    make_loop: MakeLoop,
) -> None:
    model = ScriptedModel([HANG])
    loop = make_loop(model)
    agent = await loop.create("s1", options=OPTIONS)
    streaming = asyncio.Event()
    agent.session.subscribe(
        lambda event: streaming.set() if event.type == "request/context" else None
    )
    agent.followup("go")
    await streaming.wait()
    await asyncio.sleep(0)  # let the model call start (cancelling earlier is covered elsewhere)
    agent.cancel()
    await agent.wait_idle()
    assert of_type(agent.session.events, "assistant/message") == []
    assert data(agent.session.events[-1])["reason"]["kind"] == "aborted"


async def test_request_context_names_the_window_the_routed_model_reports(
    make_loop: MakeLoop,
) -> None:
    model = ScriptedModel([text_response("one"), text_response("two")], context_window=64_000)
    loop = make_loop(model)
    agent = await loop.create("w", options=OPTIONS)
    agent.followup("a")
    await agent.wait_idle()
    agent.followup("b")
    await agent.wait_idle()
    contexts = of_type(agent.session.events, "request/context")
    assert [data(event) for event in contexts] == [
        {"provider": "scripted", "model": "demo", "contextWindow": 64_000}
    ]  # logged once: the route and its window did not change
    unknown = make_loop(ScriptedModel([text_response("x")]))
    other = await unknown.create("u", options=OPTIONS)
    other.followup("a")
    await other.wait_idle()
    assert data(of_type(other.session.events, "request/context")[0]) == {
        "provider": "scripted",
        "model": "demo",
    }
