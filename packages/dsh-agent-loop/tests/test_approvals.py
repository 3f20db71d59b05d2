"""Approvals inside a turn: the audit pair, the policy, the answerers, cancellation.

The cases follow the harness's ``user-approval`` spec (facts, our code): idle asks raise with no
append, unavailable is still audited, absent optional fields are omitted, the first answer wins,
a raising or rogue answerer is unavailable, a cancel mid-question discards the late answer,
``never`` cannot be bypassed by any listener, and a session's own policy beats the default.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dsh_agent import ApprovalRequest, Extensions
from dsh_agent_loop import AgentLoop, ApprovalOutsideTurnError, effective_approval_policy
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_tools import Ask, ToolRegistry
from loop_support import OPTIONS, EchoTool, MakeLoop, data, echo_args, flat, kinds, of_type


def _model() -> ScriptedModel:
    return ScriptedModel(
        [tool_call_response(("c1", "echo", echo_args("hello"))), text_response("done")]
    )


def _ask_for_echo(registry: ToolRegistry, reason: str | None = "needs a yes") -> None:
    registry.add_pre_execute_hook(lambda execution: Ask(reason))


async def _run(loop: AgentLoop, *, policy: str | None = None) -> Any:
    agent = await loop.create("s1", options=OPTIONS)
    if policy is not None:
        agent.session.append("approval/policy", {"policy": policy})
    agent.followup("go")
    await agent.wait_idle()
    return agent


def _result(agent: Any) -> Any:
    return flat(of_type(agent.session.events, "tool/result")[0])


def _pair(agent: Any) -> tuple[Any, Any]:
    asked = of_type(agent.session.events, "approval/asked")
    decided = of_type(agent.session.events, "approval/decided")
    assert len(asked) == len(decided) == 1
    return data(asked[0]), data(decided[0])


async def test_an_allowed_once_call_runs_and_the_pair_sits_between_call_and_result(
    make_loop: MakeLoop, registry: ToolRegistry, echo: EchoTool
) -> None:
    _ask_for_echo(registry)
    seen: list[ApprovalRequest] = []
    extensions = Extensions()
    extensions.approval.add(lambda request: seen.append(request) or "allowed-once")
    agent = await _run(make_loop(_model(), extensions=extensions))
    assert echo.calls == ["hello"]
    asked, decided = _pair(agent)
    assert asked == {"id": asked["id"], "toolName": "echo", "callId": "c1", "reason": "needs a yes"}
    assert decided == {"id": asked["id"], "outcome": "allowed-once"}
    order = kinds(agent.session.events)
    assert order.index("tool/call") < order.index("approval/asked")
    assert order.index("approval/decided") < order.index("tool/result")
    assert seen[0].agent is agent
    assert seen[0].arguments is not None
    assert seen[0].arguments["text"] == "hello"
    assert _result(agent)["isError"] is False


@pytest.mark.parametrize(
    ("answer", "outcome", "text"),
    [
        ("rejected", "rejected", 'Error: the user rejected tool "echo"'),
        (
            None,
            "unavailable",
            'Error: tool "echo" requires approval, but no approval channel is available',
        ),
        ("maybe", "unavailable", None),
    ],
)
async def test_every_other_outcome_denies_with_its_own_reason_and_is_audited(
    make_loop: MakeLoop,
    registry: ToolRegistry,
    echo: EchoTool,
    answer: str | None,
    outcome: str,
    text: str | None,
) -> None:
    _ask_for_echo(registry)
    extensions = Extensions()
    extensions.approval.add(lambda request: answer)
    agent = await _run(make_loop(_model(), extensions=extensions))
    assert echo.calls == []
    _, decided = _pair(agent)
    assert decided["outcome"] == outcome
    result = _result(agent)
    assert result["isError"] is True
    assert result["error"]["code"] == "DENIED"
    expected = text or 'Error: tool "echo" requires approval, but no approval channel is available'
    assert result["content"] == [{"type": "text", "text": expected}]
    assert data(agent.session.events[-1])["reason"] == {"kind": "completed"}


async def test_without_any_answerer_the_question_is_unavailable_and_still_audited(
    make_loop: MakeLoop, registry: ToolRegistry, echo: EchoTool
) -> None:
    _ask_for_echo(registry, reason=None)
    agent = await _run(make_loop(_model()))
    asked, decided = _pair(agent)
    assert "reason" not in asked  # absent optional fields are omitted
    assert decided["outcome"] == "unavailable"
    assert echo.calls == []


async def test_the_first_answer_wins_and_later_answerers_are_not_asked(
    make_loop: MakeLoop, registry: ToolRegistry, echo: EchoTool
) -> None:
    _ask_for_echo(registry)
    asked: list[str] = []
    extensions = Extensions()
    extensions.approval.add(lambda request: asked.append("first") or None)

    async def second(request: ApprovalRequest) -> str:
        asked.append("second")
        return "allowed-once"

    extensions.approval.add(second)
    extensions.approval.add(lambda request: asked.append("third") or "rejected")
    agent = await _run(make_loop(_model(), extensions=extensions))
    assert asked == ["first", "second"]
    assert _pair(agent)[1]["outcome"] == "allowed-once"
    assert echo.calls == ["hello"]


async def test_a_raising_answerer_is_unavailable(
    make_loop: MakeLoop, registry: ToolRegistry, echo: EchoTool
) -> None:
    _ask_for_echo(registry)
    extensions = Extensions()

    def broken(request: ApprovalRequest) -> str:
        raise RuntimeError("ui crashed")

    extensions.approval.add(broken)
    extensions.approval.add(lambda request: "allowed-once")
    agent = await _run(make_loop(_model(), extensions=extensions))
    assert _pair(agent)[1]["outcome"] == "unavailable"
    assert echo.calls == []


async def test_policy_never_rejects_before_any_answerer_runs(
    make_loop: MakeLoop, registry: ToolRegistry, echo: EchoTool
) -> None:
    _ask_for_echo(registry)
    asked: list[str] = []
    extensions = Extensions()
    extensions.approval.add(lambda request: asked.append("prepended") or "allowed-once")
    agent = await _run(make_loop(_model(), extensions=extensions, approval_policy="never"))
    assert asked == []
    assert _pair(agent)[1]["outcome"] == "rejected"
    assert echo.calls == []


@pytest.mark.parametrize(
    ("default", "logged", "effective"), [("ask", "never", "never"), ("never", "ask", "ask")]
)
async def test_the_sessions_own_policy_beats_the_default_both_ways(
    make_loop: MakeLoop,
    registry: ToolRegistry,
    echo: EchoTool,
    default: str,
    logged: str,
    effective: str,
) -> None:
    _ask_for_echo(registry)
    extensions = Extensions()
    extensions.approval.add(lambda request: "allowed-once")
    loop = make_loop(_model(), extensions=extensions, approval_policy=default)
    agent = await _run(loop, policy=logged)
    assert agent.approval_policy == effective
    assert effective_approval_policy(agent.session, default) == effective  # type: ignore[arg-type]
    expected = "allowed-once" if effective == "ask" else "rejected"
    assert _pair(agent)[1]["outcome"] == expected


async def test_a_cancel_mid_question_logs_cancelled_and_discards_the_late_answer(
    make_loop: MakeLoop, registry: ToolRegistry, echo: EchoTool
) -> None:
    _ask_for_echo(registry)
    asking = asyncio.Event()
    late = asyncio.Event()
    extensions = Extensions()

    async def slow(request: ApprovalRequest) -> str:
        asking.set()
        await late.wait()
        return "allowed-once"

    extensions.approval.add(slow)
    loop = make_loop(_model(), extensions=extensions)
    agent = await loop.create("s1", options=OPTIONS)
    agent.followup("go")
    await asking.wait()
    agent.cancel()
    late.set()
    await agent.wait_idle()
    assert _pair(agent)[1]["outcome"] == "cancelled"
    assert echo.calls == []
    assert _result(agent)["error"]["code"] == "ABORTED_BEFORE_DISPATCH"
    assert data(agent.session.events[-1])["reason"]["kind"] == "aborted"


async def test_an_ask_between_turns_raises_and_logs_nothing(make_loop: MakeLoop) -> None:
    loop = make_loop(ScriptedModel([text_response("hi")]))
    agent = await loop.create("s1", options=OPTIONS)
    with pytest.raises(ApprovalOutsideTurnError) as caught:
        await agent.request_approval("echo")
    assert caught.value.session_id == "s1"
    assert "outside a turn" in str(caught.value)
    assert len(agent.session.events) == 0
    agent.followup("go")
    await agent.wait_idle()
    count = len(agent.session.events)
    with pytest.raises(ApprovalOutsideTurnError):
        await agent.request_approval("echo")
    assert len(agent.session.events) == count


async def test_every_question_gets_a_fresh_id(
    make_loop: MakeLoop, registry: ToolRegistry, echo: EchoTool
) -> None:
    _ask_for_echo(registry)
    extensions = Extensions()
    extensions.approval.add(lambda request: "allowed-once")
    model = ScriptedModel(
        [
            tool_call_response(("c1", "echo", echo_args("a")), ("c2", "echo", echo_args("b"))),
            text_response("done"),
        ]
    )
    agent = await _run(make_loop(model, extensions=extensions))
    ids = [data(e)["id"] for e in of_type(agent.session.events, "approval/asked")]
    assert len(ids) == 2
    assert ids[0] != ids[1]
    assert [data(e)["id"] for e in of_type(agent.session.events, "approval/decided")] == ids


def test_an_unknown_default_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="approval_policy must be 'ask' or 'never'"):
        AgentLoop(ScriptedModel([]), approval_policy="sometimes")  # type: ignore[arg-type]


async def test_a_tool_without_a_reason_never_asks(make_loop: MakeLoop, echo: EchoTool) -> None:
    extensions = Extensions()
    extensions.approval.add(lambda request: "rejected")
    agent = await _run(make_loop(_model(), extensions=extensions))
    assert of_type(agent.session.events, "approval/asked") == []
    assert echo.calls == ["hello"]
