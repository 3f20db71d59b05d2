"""Well-formed answers: SSE events from a real local server become the right StreamChunks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsh_llm import (
    STREAM_CHUNK_ADAPTER,
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    Model,
    ModelRequest,
    ModelSource,
    ReasoningBlock,
    ReasoningDeltaChunk,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    ToolCallBlock,
    ToolCallDeltaChunk,
    Usage,
    UsageChunk,
    UserMessage,
    assemble_message,
)
from dsh_model_openai import OpenAICompatibleModel

REQUEST = ModelRequest(
    provider="deepseek", model="deepseek-chat", messages=[UserMessage.from_text("Hi")]
)
SOURCE = ModelSource(provider="deepseek", model="deepseek-chat")


@pytest.fixture
async def model(provider: Any, wire: Any) -> AsyncIterator[OpenAICompatibleModel]:
    async with OpenAICompatibleModel(provider.url, wire.API_KEY, "deepseek-chat") as served:
        yield served


async def collect(model: OpenAICompatibleModel, request: ModelRequest = REQUEST) -> list[Any]:
    return [chunk async for chunk in model.stream(request)]


def kinds(chunks: list[StreamChunk]) -> list[str]:
    return [chunk.type for chunk in chunks]


def test_the_model_implements_the_model_protocol() -> None:
    model = OpenAICompatibleModel("https://api.deepseek.com", "sk-x", "deepseek-chat")
    assert isinstance(model, Model)
    assert model.model == "deepseek-chat"
    assert model.base_url == "https://api.deepseek.com"


async def test_a_text_answer_streams_deltas_then_block_end_usage_and_stop(
    model: OpenAICompatibleModel, provider: Any, wire: Any, well_formed: Any
) -> None:
    provider.reply_sse(
        wire.chunk(role=True, content=""),
        wire.chunk(content="Hello"),
        wire.chunk(content=", world"),
        wire.chunk(content="!", finish="stop"),
        wire.chunk(no_choices=True, usage=wire.usage(12, 3)),
    )
    chunks = await collect(model)
    well_formed(chunks)
    assert chunks == [
        BlockStartChunk(index=0, block_type="text"),
        TextDeltaChunk(index=0, text="Hello"),
        TextDeltaChunk(index=0, text=", world"),
        TextDeltaChunk(index=0, text="!"),
        BlockEndChunk(index=0, block=TextBlock(text="Hello, world!")),
        UsageChunk(usage=Usage(input_tokens=12, output_tokens=3)),
        chunks[-1],
    ]
    assert chunks[-1].reason.kind == "stop"
    for chunk in chunks:  # every chunk is valid wire data
        assert STREAM_CHUNK_ADAPTER.validate_json(chunk.to_wire_json()) == chunk


async def test_reasoning_then_text_are_two_blocks_in_arrival_order(
    model: OpenAICompatibleModel, provider: Any, wire: Any, well_formed: Any
) -> None:
    provider.reply_sse(
        wire.chunk(role=True, content=None, reasoning=""),  # DeepSeek's empty first delta
        wire.chunk(reasoning="The user"),
        wire.chunk(reasoning=" greets."),
        wire.chunk(content="Hi"),
        wire.chunk(content=" there", finish="stop", usage=wire.usage(9, 30)),
    )
    chunks = await collect(model)
    well_formed(chunks)
    assert chunks[:9] == [
        BlockStartChunk(index=0, block_type="reasoning"),
        ReasoningDeltaChunk(index=0, text="The user"),
        ReasoningDeltaChunk(index=0, text=" greets."),
        BlockEndChunk(index=0, block=ReasoningBlock(text="The user greets.")),
        BlockStartChunk(index=1, block_type="text"),
        TextDeltaChunk(index=1, text="Hi"),
        TextDeltaChunk(index=1, text=" there"),
        BlockEndChunk(index=1, block=TextBlock(text="Hi there")),
        UsageChunk(usage=Usage(input_tokens=9, output_tokens=30)),
    ]
    message = assemble_message(chunks, SOURCE)
    assert message.content == [ReasoningBlock(text="The user greets."), TextBlock(text="Hi there")]


async def test_parallel_tool_calls_split_across_deltas_become_separate_blocks(
    model: OpenAICompatibleModel, provider: Any, wire: Any, well_formed: Any
) -> None:
    call = wire.call_delta
    provider.reply_sse(
        wire.chunk(role=True, content="Let me look."),
        wire.chunk(tool_calls=[call(0, "", id="call_a", name="bash")]),
        wire.chunk(tool_calls=[call(0, '{"comm')]),
        wire.chunk(tool_calls=[call(1, '{"pa', id="call_b", name="read")]),
        wire.chunk(tool_calls=[call(0, 'and": "ls"}')]),
        wire.chunk(tool_calls=[call(1, 'th": "a.txt"')]),
        wire.chunk(tool_calls=[call(1, "}")]),
        wire.chunk(finish="tool_calls"),
        wire.chunk(no_choices=True, usage=wire.usage(100, 40)),
    )
    chunks = await collect(model)
    well_formed(chunks)
    assert kinds(chunks) == [
        "block-start",
        "text-delta",
        "block-end",
        "block-start",
        "tool-call-delta",
        "tool-call-delta",
        "block-start",
        "tool-call-delta",
        "tool-call-delta",
        "tool-call-delta",
        "tool-call-delta",
        "block-end",
        "block-end",
        "usage",
        "finish",
    ]
    deltas = [c for c in chunks if isinstance(c, ToolCallDeltaChunk)]
    assert [(d.index, d.id, d.name, d.arguments_delta) for d in deltas] == [
        (1, "call_a", "bash", ""),
        (1, "call_a", "bash", '{"comm'),
        (2, "call_b", "read", '{"pa'),
        (1, "call_a", "bash", 'and": "ls"}'),
        (2, "call_b", "read", 'th": "a.txt"'),
        (2, "call_b", "read", "}"),
    ]
    ends = [c.block for c in chunks if isinstance(c, BlockEndChunk)]
    assert ends == [
        TextBlock(text="Let me look."),
        ToolCallBlock(id="call_a", name="bash", arguments='{"command": "ls"}'),
        ToolCallBlock(id="call_b", name="read", arguments='{"path": "a.txt"}'),
    ]
    assert chunks[-1].reason.kind == "tool-calls"
    assert [c.name for c in assemble_message(chunks, SOURCE).tool_calls] == ["bash", "read"]


async def test_malformed_tool_arguments_are_kept_raw(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    provider.reply_sse(
        wire.chunk(tool_calls=[wire.call_delta(0, '{"command": "ls', id="c1", name="bash")]),
        wire.chunk(finish="tool_calls"),
    )
    chunks = await collect(model)
    block = next(c.block for c in chunks if isinstance(c, BlockEndChunk))
    assert block == ToolCallBlock(id="c1", name="bash", arguments='{"command": "ls')


async def test_calls_that_all_say_index_0_but_differ_in_id_are_separate_blocks(
    model: OpenAICompatibleModel, provider: Any, wire: Any, well_formed: Any
) -> None:
    provider.reply_sse(
        wire.chunk(tool_calls=[wire.call_delta(0, "{}", id="c1", name="a")]),
        wire.chunk(tool_calls=[wire.call_delta(0, '{"x": 1}', id="c2", name="b")]),
        wire.chunk(finish="tool_calls"),
    )
    chunks = await collect(model)
    well_formed(chunks)
    assert [c.block for c in chunks if isinstance(c, BlockEndChunk)] == [
        ToolCallBlock(id="c1", name="a", arguments="{}"),
        ToolCallBlock(id="c2", name="b", arguments='{"x": 1}'),
    ]


async def test_a_call_without_an_id_gets_a_generated_one(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    provider.reply_sse(
        wire.chunk(tool_calls=[{"function": {"name": "bash", "arguments": '{"a"'}}]),
        wire.chunk(tool_calls=[{"function": {"arguments": ": 1}"}}]),
        wire.chunk(finish="stop"),  # some servers say stop even when they call tools
    )
    chunks = await collect(model)
    deltas = [c for c in chunks if isinstance(c, ToolCallDeltaChunk)]
    block = next(c.block for c in chunks if isinstance(c, BlockEndChunk))
    assert isinstance(block, ToolCallBlock)
    assert block.id.startswith("call_")
    assert len(block.id) > len("call_")
    assert {d.id for d in deltas} == {block.id}
    assert (block.name, block.arguments) == ("bash", '{"a": 1}')
    assert chunks[-1].reason.kind == "tool-calls"


async def test_an_id_that_arrives_late_continues_the_call_it_belongs_to(
    model: OpenAICompatibleModel, provider: Any, wire: Any, well_formed: Any
) -> None:
    provider.reply_sse(
        wire.chunk(tool_calls=[{"index": 0, "function": {"name": "bash", "arguments": ""}}]),
        wire.chunk(tool_calls=[wire.call_delta(0, '{"command": ', id="srv_7")]),
        wire.chunk(tool_calls=[wire.call_delta(0, '"ls"}')]),
        wire.chunk(tool_calls=[wire.call_delta(1, "{}", id="srv_8", name="glob")]),
        wire.chunk(finish="tool_calls"),
    )
    chunks = await collect(model)
    well_formed(chunks)
    blocks = [c.block for c in chunks if isinstance(c, BlockEndChunk)]
    assert len(blocks) == 2
    first, second = blocks
    assert isinstance(first, ToolCallBlock)
    assert (first.name, first.arguments) == ("bash", '{"command": "ls"}')
    assert first.id.startswith("call_")  # the id the first delta already carried
    assert second == ToolCallBlock(id="srv_8", name="glob", arguments="{}")


async def test_content_and_whole_arguments_in_one_delta(
    model: OpenAICompatibleModel, provider: Any, wire: Any, well_formed: Any
) -> None:
    call = {"index": 0, "id": "c9", "function": {"name": "read", "arguments": {"path": "a.txt"}}}
    provider.reply_sse(
        wire.chunk(content="Reading it.", tool_calls=[call]),
        wire.chunk(finish="stop"),
    )
    chunks = await collect(model)
    well_formed(chunks)
    message = assemble_message(chunks, SOURCE)
    assert message.text == "Reading it."
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("c9", "read", '{"path": "a.txt"}')
    ]
    assert chunks[-1].reason.kind == "tool-calls"


@pytest.mark.parametrize(
    ("wire_usage", "expected"),
    [
        pytest.param(
            {
                "prompt_tokens": 1200,
                "completion_tokens": 300,
                "prompt_tokens_details": {"cached_tokens": 1024},
                "completion_tokens_details": {"reasoning_tokens": 256},
            },
            Usage(
                input_tokens=176, output_tokens=300, cache_read_tokens=1024, reasoning_tokens=256
            ),
            id="openai-details",
        ),
        pytest.param(
            {
                "prompt_tokens": 7911,
                "completion_tokens": 3,
                "prompt_cache_hit_tokens": 7808,
                "prompt_cache_miss_tokens": 103,
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
            Usage(input_tokens=103, output_tokens=3, cache_read_tokens=7808, reasoning_tokens=0),
            id="deepseek-cache-hit",
        ),
        pytest.param(
            {"prompt_tokens": 10, "completion_tokens": 4},
            Usage(input_tokens=10, output_tokens=4),
            id="plain",
        ),
        pytest.param(
            {
                "prompt_tokens": 50,
                "completion_tokens": 4,
                "prompt_tokens_details": {"cached_tokens": 20, "cache_write_tokens": 25},
            },
            Usage(input_tokens=5, output_tokens=4, cache_read_tokens=20, cache_write_tokens=25),
            id="cache-write",
        ),
    ],
)
async def test_usage_is_mapped_to_disjoint_dsh_counts(
    model: OpenAICompatibleModel,
    provider: Any,
    wire: Any,
    wire_usage: dict[str, Any],
    expected: Usage,
) -> None:
    provider.reply_sse(wire.chunk(content="ok", finish="stop"), wire.chunk(usage=wire_usage))
    chunks = await collect(model)
    assert [c.usage for c in chunks if isinstance(c, UsageChunk)] == [expected]
    assert set(expected.to_wire()) == set(chunks[-2].usage.to_wire())  # absent stays absent


async def test_a_usage_object_without_counts_sends_no_usage_chunk(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    provider.reply_sse(wire.chunk(content="ok", finish="stop", usage={"total_tokens": 3}))
    assert kinds(await collect(model)) == ["block-start", "text-delta", "block-end", "finish"]


@pytest.mark.parametrize(
    ("finish", "kind", "code"),
    [
        ("stop", "stop", None),
        ("length", "max-tokens", None),
        ("tool_calls", "stop", None),  # a tool_calls finish without a call is just a stop
        ("content_filter", "error", "CONTENT_FILTER"),
        ("insufficient_system_resource", "error", "SERVER"),
        ("something_new", "error", "SOMETHING_NEW"),
    ],
)
async def test_finish_reasons_are_mapped(
    model: OpenAICompatibleModel,
    provider: Any,
    wire: Any,
    finish: str,
    kind: str,
    code: str | None,
) -> None:
    provider.reply_sse(wire.chunk(content="partial"), wire.chunk(finish=finish))
    chunks = await collect(model)
    reason = chunks[-1].reason
    assert reason.kind == kind
    assert (reason.error.code if reason.error else None) == code
    assert chunks[-2] == BlockEndChunk(index=0, block=TextBlock(text="partial"))


async def test_sse_framing_comments_crlf_split_lines_and_multiline_data(
    model: OpenAICompatibleModel, provider: Any, wire: Any, well_formed: Any
) -> None:
    first = wire.event(wire.chunk(content="Hé")).replace(b"\n", b"\r\n")
    second = b'data: {"choices":[{"index":0,"delta":\ndata: {"content":" ok"}}]}\n\n'
    third = wire.event(wire.chunk(finish="stop"))
    pieces = [b": keep-alive\n\n", first[:9], first[9:11], first[11:], second, third[:5]]
    pieces += [third[5:], b"event: ignored\nid: 7\n\n", b"data: [DONE]"]  # no final blank line
    provider.reply(wire.Reply(pieces=pieces))
    chunks = await collect(model)
    well_formed(chunks)
    assert [c.text for c in chunks if isinstance(c, TextDeltaChunk)] == ["Hé", " ok"]
    assert chunks[-1].reason.kind == "stop"


async def test_done_ends_the_answer_even_if_the_server_keeps_the_stream_open(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    provider.reply(
        wire.Reply(pieces=[*wire.sse(wire.chunk(content="ok", finish="stop")), wire.Hang()])
    )
    chunks = await asyncio.wait_for(collect(model), timeout=20)
    assert chunks[-1].reason.kind == "stop"


async def test_a_whole_json_answer_is_translated_when_the_server_does_not_stream(
    model: OpenAICompatibleModel, provider: Any, well_formed: Any
) -> None:
    provider.reply_json(
        200,
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "Calling.",
                        "reasoning_content": "Need a tool.",
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "bash", "arguments": '{"command":"ls"}'},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9},
        },
    )
    chunks = await collect(model)
    well_formed(chunks)
    assert [c.block for c in chunks if isinstance(c, BlockEndChunk)] == [
        ReasoningBlock(text="Need a tool."),
        TextBlock(text="Calling."),
        ToolCallBlock(id="c1", name="bash", arguments='{"command":"ls"}'),
    ]
    assert chunks[-2] == UsageChunk(usage=Usage(input_tokens=20, output_tokens=9))
    assert chunks[-1].reason.kind == "tool-calls"


async def test_connections_are_kept_alive_between_calls(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    for _ in range(3):
        provider.reply_sse(wire.chunk(content="ok", finish="stop"))
    for _ in range(3):
        assert (await collect(model))[-1].reason.kind == "stop"
    assert len({request.client_port for request in provider.requests}) == 1
    assert provider.connections == 1


async def test_the_model_serves_a_second_event_loop_after_aclose(provider: Any, wire: Any) -> None:
    model = OpenAICompatibleModel(provider.url, wire.API_KEY, "deepseek-chat")

    async def one_call() -> FinishChunk:
        try:
            chunks = await collect(model)
        finally:
            await model.aclose()
        return chunks[-1]

    for _ in range(2):
        provider.reply_sse(wire.chunk(content="ok", finish="stop"))
    for _ in range(2):  # each asyncio.run is a fresh event loop
        finish = await asyncio.to_thread(asyncio.run, one_call())
        assert finish.reason.kind == "stop"


async def test_several_events_in_one_piece_and_ascii_escaped_json_are_read(
    model: OpenAICompatibleModel, provider: Any, wire: Any, well_formed: Any
) -> None:
    packed = b"".join(wire.event(wire.chunk(content=word)) for word in ("one", " two", " three"))
    escaped = b'data: {"choices":[{"index":0,"delta":{"content":" \\u00e9\\ud83d\\ude00"}}]}\n\n'
    lone = b'data: {"choices":[{"index":0,"delta":{"content":"\\ud800"}}]}\n\n'
    finish = wire.event(wire.chunk(finish="stop")) + b"data: [DONE]\n\n"
    provider.reply(wire.Reply(pieces=[packed, escaped, lone, finish]))
    chunks = await collect(model)
    well_formed(chunks)
    texts = [c.text for c in chunks if isinstance(c, TextDeltaChunk)]
    assert texts == ["one", " two", " three", " é😀", "\ud800"]
