"""Failures: every problem ends the stream with finish{error, LlmFailure}, never an exception."""

from __future__ import annotations

import asyncio
import logging
import pickle
import socket
import threading
import time
from collections.abc import AsyncIterator
from email.utils import formatdate
from typing import Any

import httpx
import pytest

from dsh_llm import (
    BlockEndChunk,
    FinishChunk,
    LlmFailure,
    ModelRequest,
    ModelSource,
    StreamChunk,
    TextBlock,
    UsageChunk,
    UserMessage,
    assemble_message,
)
from dsh_model_openai import FAILURE_CODES, OpenAICompatibleModel

REQUEST = ModelRequest(provider="p", model="m", messages=[UserMessage.from_text("Hi")])
BOUND = 20.0  # generous: these tests wait on events, never on a tight clock


@pytest.fixture
async def model(provider: Any, wire: Any) -> AsyncIterator[OpenAICompatibleModel]:
    async with OpenAICompatibleModel(provider.url, wire.API_KEY, "m") as served:
        yield served


async def collect(model: OpenAICompatibleModel) -> list[Any]:
    return await asyncio.wait_for(_collect(model), BOUND)


async def _collect(model: OpenAICompatibleModel) -> list[Any]:
    return [chunk async for chunk in model.stream(REQUEST)]


def failure_of(chunks: list[StreamChunk]) -> LlmFailure:
    finish = chunks[-1]
    assert isinstance(finish, FinishChunk)
    assert finish.reason.kind == "error", finish
    assert finish.reason.error is not None
    assert finish.reason.error.code in FAILURE_CODES
    return finish.reason.error


@pytest.mark.parametrize(
    ("status", "body", "code", "text"),
    [
        (401, {"error": {"message": "Authentication Fails (no such user)"}}, "AUTH", "no such"),
        (403, {"error": {"message": "Forbidden region"}}, "AUTH", "Forbidden region"),
        (400, {"error": {"message": "tools[0] is invalid", "type": "invalid_request_error"}},
         "BAD_REQUEST", "tools[0] is invalid"),
        (404, {"detail": "Not Found"}, "BAD_REQUEST", "Not Found"),
        (422, {"message": "Unprocessable"}, "BAD_REQUEST", "Unprocessable"),
        (500, {"error": {"message": "internal"}}, "SERVER", "internal"),
        (503, b"<html>Service Unavailable</html>", "SERVER", "Service Unavailable"),
        (429, {"error": {"message": "slow down"}}, "RATE_LIMIT", "slow down"),
    ],
)  # fmt: skip
async def test_error_statuses_become_failures_with_stable_codes(
    model: OpenAICompatibleModel,
    provider: Any,
    status: int,
    body: Any,
    code: str,
    text: str,
) -> None:
    provider.reply_json(status, body, headers={"x-request-id": "req-77"})
    chunks = await collect(model)
    assert len(chunks) == 1
    failure = failure_of(chunks)
    assert (failure.code, failure.status) == (code, status)
    assert text in failure.message
    assert f"HTTP {status}" in failure.message
    assert "req-77" in failure.message
    assert failure.retry_after_ms is None


# Each server's own overflow answer (status, body), as it sends it.
OVERFLOW_ANSWERS = {
    "deepseek": (400, {"error": {
        "message": "This model's maximum context length is 131072 tokens. However, you requested "
        "140000 tokens (140000 in the messages, 0 in the completion). Please reduce the length "
        "of the messages or completion.",
        "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}}),
    "openai": (400, {"error": {
        "message": "Your input exceeds the context window of this model. Please adjust your "
        "input and try again.",
        "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}),
    "openai-code-only": (400, {"error": {
        "message": "Invalid request.", "type": "invalid_request_error",
        "code": "context_length_exceeded"}}),
    "llama.cpp": (400, {"error": {
        "code": 400,
        "message": "request (1636 tokens) exceeds the available context size (1024 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error", "n_prompt_tokens": 1636, "n_ctx": 1024}}),
    "llama.cpp-older": (400, {"error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing the context "
        "size or enable context shift",
        "type": "invalid_request_error"}}),
    "vllm": (400, {
        "object": "error",
        "message": "This model's maximum context length is 2048 tokens. However, you requested "
        "2100 tokens (2000 in the messages, 100 in the completion). Please reduce the length of "
        "the messages or completion.",
        "type": "BadRequestError", "param": None, "code": 400}),
    "vllm-v1": (400, {"error": {
        "message": "The decoder prompt (length 5000) is longer than the maximum model length of "
        "4096. Make sure that `max_model_len` is no smaller than the number of text tokens.",
        "type": "BadRequestError", "param": None, "code": 400}}),
    "ollama": (400, {"error": {
        "message": "prompt too long; exceeded max context length by 612 tokens",
        "type": "api_error", "param": None, "code": None}}),
    "ollama-as-500": (500, {"error": {
        "message": "prompt too long; exceeded max context length by 612 tokens",
        "type": "api_error", "param": None, "code": None}}),
}  # fmt: skip


@pytest.mark.parametrize("server", sorted(OVERFLOW_ANSWERS))
async def test_each_servers_context_overflow_is_its_own_code(
    model: OpenAICompatibleModel, provider: Any, server: str
) -> None:
    status, body = OVERFLOW_ANSWERS[server]
    provider.reply_json(status, body)
    failure = failure_of(await collect(model))
    assert (failure.code, failure.status) == ("CONTEXT_WINDOW_EXCEEDED", status)
    assert f"HTTP {status}" in failure.message


STATED_WINDOWS = {
    "deepseek": 131072, "openai": None, "openai-code-only": None, "llama.cpp": 1024,
    "llama.cpp-older": None,
    "vllm": 2048, "vllm-v1": 4096, "ollama": None, "ollama-as-500": None,
}  # fmt: skip
"""The window each refusal states (``None``: it names none)."""


@pytest.mark.parametrize("server", sorted(OVERFLOW_ANSWERS))
async def test_the_window_an_overflow_states_is_remembered_for_its_model(
    model: OpenAICompatibleModel, provider: Any, server: str
) -> None:
    """A too-large configured window would overflow every request (the summary that should
    recover it too); the window the server enforced is told to whoever asks."""
    assert model.overflow_window("m") is None
    status, body = OVERFLOW_ANSWERS[server]
    provider.reply_json(status, body)
    failure_of(await collect(model))
    assert model.overflow_window("m") == STATED_WINDOWS[server]
    assert model.overflow_window("other-model") is None


async def test_a_garbled_or_absurd_stated_window_is_not_believed(
    model: OpenAICompatibleModel, provider: Any
) -> None:
    body = {"error": {"message": "exceeds the available context size", "n_ctx": 10**12,
                      "type": "exceed_context_size_error"}}  # fmt: skip
    provider.reply_json(400, body)
    assert failure_of(await collect(model)).code == "CONTEXT_WINDOW_EXCEEDED"
    assert model.overflow_window("m") is None
    provider.reply_json(400, {"error": {"message": "ok", "n_ctx": True,
                                        "type": "exceed_context_size_error"}})  # fmt: skip
    failure_of(await collect(model))
    assert model.overflow_window("m") is None


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (429, {"error": {"message": "Too many tokens per minute, slow down"}}, "RATE_LIMIT"),
        (503, {"error": {"message": "Service unavailable: too many tokens in flight"}}, "SERVER"),
        (400, {"error": {"message": "messages[3].content must be a string",
                         "type": "invalid_request_error"}}, "BAD_REQUEST"),
    ],
)  # fmt: skip
async def test_throttling_and_other_refusals_are_not_taken_for_an_overflow(
    model: OpenAICompatibleModel, provider: Any, status: int, body: Any, code: str
) -> None:
    provider.reply_json(status, body)
    assert failure_of(await collect(model)).code == code


async def test_an_overflow_error_event_inside_the_stream_is_recognised(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    _, body = OVERFLOW_ANSWERS["llama.cpp"]
    provider.reply_sse(body)
    failure = failure_of(await collect(model))
    assert failure.code == "CONTEXT_WINDOW_EXCEEDED"
    assert "inside the stream" in failure.message


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "2"}, 2000),
        ({"Retry-After": "1.5"}, 1500),
        ({"retry-after-ms": "750"}, 750),
        ({"Retry-After": "0"}, None),
        ({"Retry-After": "soon"}, None),
    ],
)
async def test_rate_limit_carries_the_retry_after_hint(
    model: OpenAICompatibleModel, provider: Any, headers: dict[str, str], expected: int | None
) -> None:
    provider.reply_json(429, {"error": {"message": "Rate limit reached"}}, headers=headers)
    failure = failure_of(await collect(model))
    assert (failure.code, failure.retry_after_ms) == ("RATE_LIMIT", expected)


async def test_rate_limit_reads_an_http_date_retry_after(
    model: OpenAICompatibleModel, provider: Any
) -> None:
    when = formatdate(time.time() + 3600, usegmt=True)
    provider.reply_json(429, {"error": {"message": "later"}}, headers={"Retry-After": when})
    failure = failure_of(await collect(model))
    assert failure.retry_after_ms is not None
    assert 3_500_000 <= failure.retry_after_ms <= 3_601_000


async def test_a_stream_cut_mid_way_is_a_transport_failure_that_keeps_what_arrived(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    pieces = wire.sse(wire.chunk(content="Hel"), wire.chunk(content="lo"), done=False)
    provider.reply(wire.Reply(pieces=pieces, cut=True))
    chunks = await collect(model)
    failure = failure_of(chunks)
    assert failure.code == "TRANSPORT"
    assert not any(isinstance(c, BlockEndChunk) for c in chunks)  # never reached a final form
    partial = assemble_message(chunks, ModelSource(provider="p", model="m"))
    assert partial.content == [TextBlock(text="Hello")]


async def test_a_clean_end_without_done_or_finish_after_content_is_a_transport_failure(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    provider.reply_sse(wire.chunk(content="Hel"), done=False)
    failure = failure_of(await collect(model))
    assert failure.code == "TRANSPORT"
    assert "[DONE]" in failure.message


async def test_a_cut_after_the_finish_reason_still_delivers_the_whole_answer(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    pieces = wire.sse(wire.chunk(content="Done", finish="stop"), done=False)
    provider.reply(wire.Reply(pieces=pieces, cut=True))
    chunks = await collect(model)
    assert chunks[-1].reason.kind == "stop"
    assert chunks[-2] == BlockEndChunk(index=0, block=TextBlock(text="Done"))


@pytest.mark.parametrize(
    "pieces",
    [
        pytest.param([b"data: [DONE]\n\n"], id="only-done"),
        pytest.param([], id="empty-body"),
    ],
)
async def test_a_stream_with_no_content_and_no_finish_is_an_empty_response(
    model: OpenAICompatibleModel, provider: Any, wire: Any, pieces: list[bytes]
) -> None:
    provider.reply(wire.Reply(pieces=pieces))
    assert failure_of(await collect(model)).code == "EMPTY_RESPONSE"


async def test_a_stop_with_no_content_is_an_empty_response_after_its_usage(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    provider.reply_sse(wire.chunk(content="", finish="stop"), wire.chunk(usage=wire.usage(9, 0)))
    chunks = await collect(model)
    assert [c.type for c in chunks] == ["usage", "finish"]
    assert isinstance(chunks[0], UsageChunk)
    assert failure_of(chunks).code == "EMPTY_RESPONSE"


async def test_an_event_that_is_not_json_is_a_malformed_response(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    provider.reply(wire.Reply(pieces=[wire.event(wire.chunk(content="a")), b"data: {oops\n\n"]))
    chunks = await collect(model)
    failure = failure_of(chunks)
    assert failure.code == "MALFORMED_RESPONSE"
    assert "{oops" in failure.message


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ({"message": "upstream overloaded", "code": 502}, "SERVER"),
        ({"message": "bad tool schema", "code": 400}, "BAD_REQUEST"),
        ({"message": "something broke"}, "SERVER"),
    ],
)
async def test_an_error_event_inside_the_stream_is_a_failure(
    model: OpenAICompatibleModel, provider: Any, wire: Any, error: dict[str, Any], code: str
) -> None:
    provider.reply_sse(wire.chunk(content="a"), {"error": error})
    failure = failure_of(await collect(model))
    assert failure.code == code
    assert error["message"] in failure.message


async def test_a_refused_connection_is_a_transport_failure(wire: Any) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with OpenAICompatibleModel(f"http://127.0.0.1:{port}/v1", wire.API_KEY, "m") as model:
        failure = failure_of(await collect(model))
    assert failure.code == "TRANSPORT"
    assert failure.status is None


@pytest.mark.parametrize("before_headers", [True, False])
async def test_silence_longer_than_the_read_timeout_is_a_timeout(
    provider: Any, wire: Any, before_headers: bool
) -> None:
    if before_headers:
        provider.reply(wire.Reply(hang_before_headers=True))
    else:
        provider.reply(wire.Reply(pieces=[wire.event(wire.chunk(content="a")), wire.Hang()]))
    async with OpenAICompatibleModel(provider.url, wire.API_KEY, "m", read_timeout=0.2) as model:
        failure = failure_of(await collect(model))
    assert failure.code == "TIMEOUT"
    assert "0.2s" in failure.message
    assert await asyncio.to_thread(provider.disconnected.wait, BOUND)


async def test_cancelling_the_consumer_closes_the_http_stream_promptly(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    provider.reply(wire.Reply(pieces=[wire.event(wire.chunk(content="slow")), wire.Hang()]))
    first = asyncio.Event()
    seen: list[StreamChunk] = []

    async def consume() -> None:
        async for chunk in model.stream(REQUEST):
            seen.append(chunk)
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), BOUND)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=BOUND)
    assert task in done
    assert task.cancelled()
    assert await asyncio.to_thread(provider.disconnected.wait, BOUND)
    assert [c.type for c in seen] == ["block-start", "text-delta"]


async def test_aclose_of_the_iterator_closes_the_http_stream(
    model: OpenAICompatibleModel, provider: Any, wire: Any
) -> None:
    gate = wire.Gate(event=threading.Event())  # never opened
    provider.reply(wire.Reply(pieces=[wire.event(wire.chunk(content="a")), gate]))
    stream = model.stream(REQUEST)
    assert (await asyncio.wait_for(anext(stream), BOUND)).type == "block-start"
    await asyncio.wait_for(stream.aclose(), BOUND)  # type: ignore[attr-defined]
    assert await asyncio.to_thread(provider.disconnected.wait, BOUND)


async def test_the_api_key_never_shows_in_repr_failures_or_logs(
    provider: Any, wire: Any, caplog: pytest.LogCaptureFixture
) -> None:
    key = wire.API_KEY
    echo = {"error": {"message": f"Incorrect API key provided: {key}"}}
    provider.reply_json(401, echo)
    provider.reply(wire.Reply(pieces=[wire.event(wire.chunk(content="a")), wire.Hang()]))
    caplog.set_level(logging.DEBUG)
    model = OpenAICompatibleModel(provider.url, key, "m", read_timeout=0.2)
    async with model:
        rejected = await collect(model)
        timed_out = await collect(model)
    texts = [repr(model), str(model), repr(vars(model))]
    texts += [c.to_wire_json() for c in rejected + timed_out]
    texts += [record.getMessage() for record in caplog.records]
    assert failure_of(rejected).code == "AUTH"
    assert "<redacted>" in failure_of(rejected).message
    assert failure_of(timed_out).code == "TIMEOUT"
    assert caplog.records, "httpx logs its requests at DEBUG/INFO: the check must see them"
    for text in texts:
        assert key not in text
    with pytest.raises(TypeError):
        pickle.dumps(model._key)
    assert provider.requests[0].headers["authorization"] == f"Bearer {key}"


async def test_a_closed_external_client_is_a_failure_not_an_exception(
    provider: Any, wire: Any
) -> None:
    client = httpx.AsyncClient()
    await client.aclose()
    model = OpenAICompatibleModel(provider.url, wire.API_KEY, "m", http_client=client)
    failure = failure_of(await collect(model))
    assert failure.code == "UNKNOWN"
    assert "closed" in failure.message


async def test_an_external_client_is_used_and_left_open(provider: Any, wire: Any) -> None:
    provider.reply_sse(wire.chunk(content="ok", finish="stop"))
    async with httpx.AsyncClient(headers={"X-Via": "custom"}) as client:
        async with OpenAICompatibleModel(provider.url, None, "m", http_client=client) as model:
            assert (await collect(model))[-1].reason.kind == "stop"
        assert not client.is_closed
    assert provider.last.headers["x-via"] == "custom"


def test_every_failure_code_is_documented() -> None:
    assert set(FAILURE_CODES) >= {
        "AUTH",
        "RATE_LIMIT",
        "SERVER",
        "TIMEOUT",
        "TRANSPORT",
        "BAD_REQUEST",
        "EMPTY_RESPONSE",
    }
    assert all(description.strip() for description in FAILURE_CODES.values())
