"""The agent seam: options and request configs, cancel causes, and extension-point lists."""

from __future__ import annotations

import inspect
import typing

import pytest
from pydantic import ValidationError

import dsh_agent
from dsh_agent import (
    Agent,
    AgentOptions,
    CancelCause,
    CheckpointPolicy,
    Enter,
    Extensions,
    Listeners,
    Reject,
    RequestConfig,
)


def test_options_seed_the_request_config() -> None:
    options = AgentOptions(provider="deepseek", model="chat", max_tokens=100, reasoning_effort="hi")
    assert options.request_config().to_wire() == {
        "provider": "deepseek",
        "model": "chat",
        "maxTokens": 100,
        "reasoningEffort": "hi",
    }


@pytest.mark.parametrize(
    "fields",
    [
        {"provider": "", "model": "m"},
        {"provider": "p", "model": ""},
        {"provider": "p", "model": "m", "max_tokens": 0},
        {"provider": "p", "model": "m", "max_tokens": "5"},
    ],
)
def test_options_refuse_what_no_provider_could_serve(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        AgentOptions.model_validate(fields)


def test_a_request_config_round_trips_through_its_wire_form() -> None:
    config = RequestConfig(
        provider="p", model="m", max_tokens=5, temperature=0.5, top_p=1.0, stop=("x",)
    )
    wire = config.to_wire()
    assert wire == {
        "provider": "p",
        "model": "m",
        "maxTokens": 5,
        "temperature": 0.5,
        "topP": 1.0,
        "stop": ["x"],
    }
    assert RequestConfig.from_wire(wire) == config


def test_a_logged_config_with_keys_of_other_writers_still_reads() -> None:
    config = RequestConfig.from_wire(
        {"provider": "p", "model": "m", "temperature": 1, "somethingNew": True}
    )
    assert config.temperature == 1.0
    with pytest.raises(ValidationError):
        RequestConfig.from_wire({"model": "m"})


def test_cancel_causes_have_their_wire_form() -> None:
    assert CancelCause().to_wire() == {"kind": "user"}
    assert CancelCause("hook", "stop").to_wire() == {"kind": "hook", "reason": "stop"}
    with pytest.raises(ValueError, match="only a 'hook'"):
        CancelCause("user", "why")
    with pytest.raises(ValueError, match="unknown cancel kind"):
        CancelCause("boredom")  # type: ignore[arg-type]


def test_listeners_keep_order_and_each_disposer_removes_its_own() -> None:
    points: Listeners[object] = Listeners("demo")  # type: ignore[type-var]

    def a() -> None: ...
    def b() -> None: ...

    first = points.add(a)
    points.add(b)
    second_a = points.add(a)
    assert list(points) == [a, b, a]
    second_a()
    assert list(points) == [a, b]
    with first:
        pass
    assert list(points) == [b]
    first()  # twice is harmless
    assert len(points) == 1
    with pytest.raises(TypeError, match="demo listener must be callable"):
        points.add(42)  # type: ignore[arg-type]


def test_iterating_is_a_snapshot() -> None:
    points: Listeners[object] = Listeners("demo")  # type: ignore[type-var]
    seen = []

    def adds_another() -> None: ...

    points.add(adds_another)
    for listener in points:
        seen.append(listener)
        points.add(adds_another)
    assert seen == [adds_another]
    assert len(points) == 2


def test_every_extension_point_is_its_own_list() -> None:
    extensions = Extensions()
    names = [
        "session_start",
        "session_prefix",
        "pre_step",
        "turn_stopping",
        "request",
        "request_error",
        "approval",
    ]
    lists = [getattr(extensions, name) for name in names]
    assert [points.name for points in lists] == names
    assert len({id(points) for points in lists}) == len(names)
    assert Extensions().pre_step is not extensions.pre_step


def test_the_approval_vocabularies_are_the_v0_ones() -> None:
    """The outcome and policy tuples list exactly their Literal's values, in the v0 spelling."""
    assert typing.get_args(dsh_agent.ApprovalOutcome) == dsh_agent.APPROVAL_OUTCOMES
    assert dsh_agent.APPROVAL_OUTCOMES == ("allowed-once", "rejected", "cancelled", "unavailable")
    assert typing.get_args(dsh_agent.ApprovalPolicy) == dsh_agent.APPROVAL_POLICIES
    assert dsh_agent.APPROVAL_POLICIES == ("ask", "never")


def test_an_approval_request_names_the_call_and_leaves_the_rest_absent() -> None:
    request = dsh_agent.ApprovalRequest(agent=object(), tool_name="bash")  # type: ignore[arg-type]
    assert (request.call_id, request.reason, request.arguments) == (None, None, None)
    with pytest.raises(AttributeError):
        request.reason = "changed"  # type: ignore[misc]


def test_decisions_are_plain_values() -> None:
    assert Enter().messages == ()
    assert Reject("no").reason == "no"


def test_the_protocols_are_runtime_checkable() -> None:
    class Policy:
        async def checkpoint(self, point: object, agent: object, flush: object) -> None:
            return None

    assert isinstance(Policy(), CheckpointPolicy)
    assert not isinstance(object(), Agent)


def test_every_public_class_is_documented() -> None:
    classes = [getattr(dsh_agent, name) for name in dsh_agent.__all__]
    classes = [value for value in classes if inspect.isclass(value)]
    assert len(classes) > 10
    for value in classes:
        assert (value.__doc__ or "").strip(), value
