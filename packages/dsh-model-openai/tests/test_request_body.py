"""What the server receives: the Chat Completions body and headers built from a ModelRequest."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from dsh_llm import (
    AssistantMessage,
    ImageAttachment,
    ImageBlock,
    ModelInfo,
    ModelRequest,
    ModelSource,
    ReasoningBlock,
    Sampling,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolSchema,
    ToolSource,
    UserMessage,
    UserSource,
    context_window_of,
)
from dsh_model_openai import OpenAICompatibleModel

SOURCE = ModelSource(provider="deepseek", model="deepseek-reasoner")
BASH = ToolSchema(
    name="bash",
    description="Run a bash command.",
    parameters={
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
)


def assistant(*blocks: Any) -> AssistantMessage:
    return AssistantMessage(content=list(blocks), source=SOURCE)


def tool_result(call_id: str, *content: Any) -> ToolResultMessage:
    return ToolResultMessage(
        source=ToolSource(call_id=call_id),
        content=[ToolResultBlock(tool_call_id=call_id, content=list(content))],
    )


# Turn 1: a question answered with reasoning. Turn 2: a tool loop still in progress.
CONVERSATION = [
    UserMessage.from_text("What is 2+2?"),
    assistant(ReasoningBlock(text="Simple sum."), TextBlock(text="4.")),
    UserMessage.from_text("List the files."),
    assistant(
        ReasoningBlock(text="I should run ls."),
        TextBlock(text="Running ls."),
        ToolCallBlock(id="call_1", name="bash", arguments='{"command": "ls"}'),
        ToolCallBlock(id="call_2", name="bash", arguments='{"command": "pwd"}'),
    ),
    tool_result("call_1", TextBlock(text="a.txt\n")),
    tool_result("call_2", TextBlock(text="")),
    assistant(
        ReasoningBlock(text="Now count."),
        ToolCallBlock(id="call_3", name="bash", arguments='{"command": "wc -l a.txt"}'),
    ),
    tool_result("call_3", TextBlock(text="3 a.txt")),
]


async def send(
    provider: Any, wire: Any, request: ModelRequest, **options: Any
) -> tuple[dict[str, Any], list[Any]]:
    provider.reply_sse(wire.chunk(content="ok", finish="stop"))
    api_key = options.pop("api_key", wire.API_KEY)
    async with OpenAICompatibleModel(
        provider.url, api_key, options.pop("model", "deepseek-chat"), **options
    ) as model:
        chunks = [chunk async for chunk in model.stream(request)]
    return provider.last.json, chunks


async def test_the_body_maps_system_history_tools_sampling_and_limits(
    provider: Any, wire: Any
) -> None:
    request = ModelRequest(
        provider="deepseek",
        model="deepseek-reasoner",
        system="You are terse.",
        messages=CONVERSATION,
        tools=[BASH],
        sampling=Sampling(temperature=0.2, top_p=0.9, stop=["\n\n"], reasoning_effort="high"),
        max_tokens=2048,
    )
    body, chunks = await send(provider, wire, request)
    assert chunks[-1].reason.kind == "stop"
    assert body == {
        "model": "deepseek-reasoner",  # the request's model, not the adapter's default
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4."},  # an earlier turn: no reasoning
            {"role": "user", "content": "List the files."},
            {
                "role": "assistant",
                "content": "Running ls.",
                "reasoning_content": "I should run ls.",  # this turn's tool steps: reasoning
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "pwd"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\n"},
            {"role": "tool", "tool_call_id": "call_2", "content": "(no output)"},
            {
                "role": "assistant",
                "content": "",  # never null
                "reasoning_content": "Now count.",
                "tool_calls": [
                    {
                        "id": "call_3",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "wc -l a.txt"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_3", "content": "3 a.txt"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "bash",
                    "description": "Run a bash command.",
                    "parameters": BASH.parameters,
                },
            }
        ],
        "temperature": 0.2,
        "top_p": 0.9,
        "stop": ["\n\n"],
        "reasoning_effort": "high",
        "max_tokens": 2048,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_headers_carry_the_key_and_ask_for_an_event_stream(provider: Any, wire: Any) -> None:
    request = ModelRequest(provider="p", model="m", messages=[UserMessage.from_text("hi")])
    await send(provider, wire, request, headers={"X-Title": "dsh"})
    received = provider.last
    assert (received.method, received.path) == ("POST", "/v1/chat/completions")
    assert received.headers["authorization"] == f"Bearer {wire.API_KEY}"
    assert received.headers["content-type"] == "application/json"
    assert received.headers["accept"] == "text/event-stream"
    assert received.headers["x-title"] == "dsh"


async def test_without_a_key_no_authorization_header_is_sent(provider: Any, wire: Any) -> None:
    request = ModelRequest(provider="p", model="m", messages=[UserMessage.from_text("hi")])
    await send(provider, wire, request, api_key=None)
    assert "authorization" not in provider.last.headers


async def test_unset_options_are_left_out_and_an_empty_model_falls_back(
    provider: Any, wire: Any
) -> None:
    request = ModelRequest(provider="p", model="", messages=[UserMessage.from_text("hi")])
    body, _ = await send(provider, wire, request, model="qwen3:8b")
    assert body == {
        "model": "qwen3:8b",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


@pytest.mark.parametrize(
    ("replay", "expected"),
    [
        ("current-turn", [None, "I should run ls.", "Now count."]),
        ("never", [None, None, None]),
        ("always", ["Simple sum.", "I should run ls.", "Now count."]),
    ],
)
async def test_reasoning_replay_decides_which_assistant_messages_send_reasoning_back(
    provider: Any, wire: Any, replay: str, expected: list[str | None]
) -> None:
    request = ModelRequest(provider="deepseek", model="deepseek-reasoner", messages=CONVERSATION)
    body, _ = await send(provider, wire, request, reasoning_replay=replay)
    sent = [m.get("reasoning_content") for m in body["messages"] if m["role"] == "assistant"]
    assert sent == expected


async def test_after_a_new_user_message_no_earlier_reasoning_is_sent_by_default(
    provider: Any, wire: Any
) -> None:
    messages = [*CONVERSATION, assistant(TextBlock(text="3 lines.")), UserMessage.from_text("ok")]
    request = ModelRequest(provider="deepseek", model="deepseek-reasoner", messages=messages)
    body, _ = await send(provider, wire, request)
    assert not any("reasoning_content" in message for message in body["messages"])


async def test_images_go_as_image_url_parts_for_users_and_are_named_in_tool_results(
    provider: Any, wire: Any
) -> None:
    picture = ImageBlock(data="iVBORw0KGgo=", mime_type="image/png")
    messages = [
        UserMessage(content=[TextBlock(text="What is this?"), picture], source=UserSource()),
        assistant(ToolCallBlock(id="c1", name="screenshot", arguments="{}")),
        tool_result("c1", TextBlock(text="Took it: "), picture),
    ]
    body, _ = await send(provider, wire, ModelRequest(provider="p", model="m", messages=messages))
    assert body["messages"][0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    }
    assert body["messages"][2]["content"] == "Took it: [image omitted: image/png]"


def users_alternate(messages: list[dict[str, Any]]) -> bool:
    """The rule strict chat templates (Gemma-2, Mistral-Nemo) enforce on a conversation: never
    two user messages in a row."""
    roles = [m["role"] for m in messages]
    return all(not (a == b == "user") for a, b in itertools.pairwise(roles))


async def test_consecutive_user_messages_go_as_one_user_turn(provider: Any, wire: Any) -> None:
    picture = ImageBlock(data="iVBORw0KGgo=", mime_type="image/png")
    messages = [
        UserMessage.from_text("<runtime-context>cwd: /work</runtime-context>"),
        UserMessage.from_text("List the files."),
        assistant(TextBlock(text="a.txt")),
        UserMessage.from_text("And this?"),
        UserMessage(content=[picture], source=UserSource()),
        UserMessage.from_text(""),
    ]
    request = ModelRequest(provider="p", model="m", system="Be brief.", messages=messages)
    body, _ = await send(provider, wire, request)
    assert users_alternate(body["messages"])
    assert body["messages"][:3] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": "<runtime-context>cwd: /work</runtime-context>\n\nList the files.",
        },
        {"role": "assistant", "content": "a.txt"},
    ]
    assert body["messages"][3] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "And this?"},
            {"type": "text", "text": "\n\n"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    }
    assert len(body["messages"]) == 4


async def test_an_image_stored_as_an_attachment_is_named_not_sent_as_broken_data(
    provider: Any, wire: Any
) -> None:
    stored = ImageBlock(
        attachment=ImageAttachment(
            attachment_id="sha256:ab12", media_type="image/jpeg", bytes=9, width=4, height=3
        )
    )
    messages = [
        UserMessage(content=[TextBlock(text="Look:"), stored], source=UserSource()),
        assistant(ToolCallBlock(id="c1", name="screenshot", arguments="{}")),
        tool_result("c1", stored),
    ]
    body, _ = await send(provider, wire, ModelRequest(provider="p", model="m", messages=messages))
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "Look:"},
        {"type": "text", "text": "[image attachment not available: sha256:ab12 (image/jpeg, 4x3)]"},
    ]
    assert body["messages"][2]["content"] == "[image omitted: image/jpeg]"


async def test_extra_body_fields_are_sent_and_the_request_overrides_them(
    provider: Any, wire: Any
) -> None:
    request = ModelRequest(
        provider="p", model="m", messages=[UserMessage.from_text("hi")], max_tokens=99
    )
    extra = {"thinking": {"type": "enabled"}, "max_tokens": 8192, "stream": False}
    body, _ = await send(provider, wire, request, extra_body=extra)
    assert body["thinking"] == {"type": "enabled"}
    assert body["max_tokens"] == 99
    assert body["stream"] is True


async def test_a_request_that_cannot_be_json_fails_without_calling_the_server(
    provider: Any, wire: Any
) -> None:
    tool = ToolSchema(name="t", description="", parameters={"default": float("nan")})
    request = ModelRequest(provider="p", model="m", tools=[tool])
    async with OpenAICompatibleModel(provider.url, wire.API_KEY, "m") as model:
        chunks = [chunk async for chunk in model.stream(request)]
    assert [c.type for c in chunks] == ["finish"]
    assert chunks[0].reason.error.code == "BAD_REQUEST"
    assert provider.requests == []


@pytest.mark.parametrize(
    ("base_url", "endpoint"),
    [
        ("https://api.deepseek.com", "https://api.deepseek.com/chat/completions"),
        ("https://api.openai.com/v1/", "https://api.openai.com/v1/chat/completions"),
        ("http://localhost:8000/v1/chat/completions", "http://localhost:8000/v1/chat/completions"),
    ],
)
def test_the_endpoint_is_the_base_url_plus_chat_completions(base_url: str, endpoint: str) -> None:
    model = OpenAICompatibleModel(base_url, None, "m")
    assert model._endpoint == endpoint


@pytest.mark.parametrize(
    ("args", "options", "message"),
    [
        (("api.deepseek.com", "k", "m"), {}, "base_url"),
        (("ftp://host", "k", "m"), {}, "base_url"),
        (("https://h", "  ", "m"), {}, "api_key is blank"),
        (("https://h", "k", ""), {}, "model"),
        (("https://h", "k", "m"), {"reasoning_replay": "sometimes"}, "reasoning_replay"),
        (("https://h", "k", "m"), {"read_timeout": 0}, "read_timeout"),
        (("https://h", "k", "m"), {"connect_timeout": -1}, "connect_timeout"),
    ],
)
def test_bad_construction_arguments_are_refused(
    args: tuple[str, str, str], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        OpenAICompatibleModel(*args, **options)


def test_the_context_window_is_what_the_configuration_says() -> None:
    """Chat Completions reports no window: the model says what it was configured with."""
    told = OpenAICompatibleModel("http://127.0.0.1:9/v1", None, "m", context_window=65_536)
    assert isinstance(told, ModelInfo)
    assert context_window_of(told, "m") == 65_536
    assert context_window_of(OpenAICompatibleModel("http://127.0.0.1:9/v1", None, "m"), "m") is None
    for bad in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match="context_window must be a positive number of tokens"):
            OpenAICompatibleModel("http://127.0.0.1:9/v1", None, "m", context_window=bad)  # type: ignore[arg-type]
