"""ModelRequest and the Model protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pydantic import ValidationError

from dsh_llm import (
    AssistantMessage,
    Model,
    ModelRequest,
    Sampling,
    StreamChunk,
    ToolResultMessage,
    ToolSchema,
    UserMessage,
)
from dsh_llm.testing import ScriptedModel, text_response


def test_request_validates_wire_messages_into_their_classes() -> None:
    request = ModelRequest.model_validate(
        {
            "provider": "deepseek",
            "model": "deepseek-chat",
            "system": "Be brief.",
            "messages": [
                {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"}
                    ],
                    "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
                },
                {
                    "role": "user",
                    "source": {"kind": "tool", "callId": "c1"},
                    "content": [
                        {"type": "tool-result", "toolCallId": "c1", "content": [], "isError": False}
                    ],
                },
            ],
            "tools": [
                {"name": "bash", "description": "Run bash.", "parameters": {"type": "object"}}
            ],
            "maxTokens": 1024,
        }
    )
    assert [type(m) for m in request.messages] == [UserMessage, AssistantMessage, ToolResultMessage]
    assert request.tools == [
        ToolSchema(name="bash", description="Run bash.", parameters={"type": "object"})
    ]
    assert request.max_tokens == 1024


def test_request_defaults_are_empty_and_unset() -> None:
    request = ModelRequest(provider="p", model="m")
    assert request.messages == []
    assert request.tools == []
    assert request.sampling == Sampling()
    assert request.to_wire() == {"provider": "p", "model": "m"}


def test_request_refuses_a_zero_max_tokens() -> None:
    with pytest.raises(ValidationError):
        ModelRequest(provider="p", model="m", max_tokens=0)


def test_sampling_writes_camel_case_keys() -> None:
    sampling = Sampling(temperature=0.2, top_p=0.9, stop=["END"], reasoning_effort="high")
    assert sampling.to_wire() == {
        "temperature": 0.2,
        "topP": 0.9,
        "stop": ["END"],
        "reasoningEffort": "high",
    }


def test_tool_schema_refuses_an_empty_name() -> None:
    with pytest.raises(ValidationError):
        ToolSchema(name="", description="d", parameters={})


def test_scripted_model_is_a_model() -> None:
    assert isinstance(ScriptedModel([text_response("x")]), Model)


def test_an_async_generator_class_satisfies_the_model_protocol() -> None:
    class Echo:
        async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
            for chunk in text_response(request.model):
                yield chunk

    model: Model = Echo()
    assert isinstance(model, Model)
