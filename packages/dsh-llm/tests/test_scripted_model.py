"""ScriptedModel: replays its script, records requests, fails clearly when exhausted, hangs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from dsh_llm import ModelRequest, StreamChunk, TextDeltaChunk, UserMessage
from dsh_llm.testing import (
    HANG,
    Hang,
    ScriptedModel,
    ScriptExhaustedError,
    text_response,
)


def _request(text: str = "hi") -> ModelRequest:
    return ModelRequest(provider="scripted", model="m", messages=[UserMessage.from_text(text)])


async def _collect(model: ScriptedModel, request: ModelRequest) -> list[StreamChunk]:
    return [chunk async for chunk in model.stream(request)]


async def test_replays_chunk_lists_in_script_order() -> None:
    first, second = text_response("one"), text_response("two")
    model = ScriptedModel([first, second])
    assert await _collect(model, _request()) == first
    assert await _collect(model, _request()) == second


async def test_records_every_request_in_order() -> None:
    model = ScriptedModel([text_response("a"), text_response("b")])
    requests = [_request("first"), _request("second")]
    for request in requests:
        await _collect(model, request)
    assert model.requests == requests


async def test_exhausted_script_raises_naming_the_request_number() -> None:
    model = ScriptedModel([text_response("only")])
    await _collect(model, _request())
    with pytest.raises(ScriptExhaustedError, match="request #2") as caught:
        await _collect(model, _request("extra"))
    assert caught.value.request_number == 2
    assert caught.value.request == _request("extra")


async def test_a_request_that_finds_the_script_exhausted_is_still_recorded() -> None:
    model = ScriptedModel()
    with pytest.raises(ScriptExhaustedError):
        await _collect(model, _request())
    assert len(model.requests) == 1


async def test_callable_entry_receives_the_request() -> None:
    def echo(request: ModelRequest) -> list[StreamChunk]:
        return text_response(f"{len(request.messages)} messages")

    model = ScriptedModel([echo])
    assert await _collect(model, _request()) == text_response("1 messages")


async def test_callable_entry_may_return_an_async_iterator() -> None:
    async def chunks(request: ModelRequest) -> AsyncIterator[StreamChunk]:
        yield TextDeltaChunk(index=0, text=request.model)

    model = ScriptedModel([chunks])
    assert await _collect(model, _request()) == [TextDeltaChunk(index=0, text="m")]


async def test_callable_entry_may_be_a_coroutine_function() -> None:
    async def later(request: ModelRequest) -> list[StreamChunk]:
        await asyncio.sleep(0)
        return text_response("awaited")

    model = ScriptedModel([later])
    assert await _collect(model, _request()) == text_response("awaited")


async def test_add_appends_entries_and_remaining_counts_them() -> None:
    model = ScriptedModel([text_response("a")])
    model.add(text_response("b"), HANG)
    assert model.remaining == 3
    await _collect(model, _request())
    assert model.remaining == 2


async def test_hang_waits_until_the_consumer_is_cancelled() -> None:
    model = ScriptedModel([HANG])
    started = asyncio.Event()

    async def consume() -> None:
        started.set()
        await _collect(model, _request())

    task = asyncio.create_task(consume())
    await started.wait()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_hang_with_before_streams_those_chunks_first() -> None:
    partial = text_response("partial answer")[:2]
    model = ScriptedModel([Hang(before=partial)])
    received: list[StreamChunk] = []
    got_partial = asyncio.Event()

    async def consume() -> None:
        async for chunk in model.stream(_request()):
            received.append(chunk)
            if len(received) == len(partial):
                got_partial.set()

    task = asyncio.create_task(consume())
    await got_partial.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert received == partial


async def test_cancelling_mid_stream_stops_before_the_next_chunk() -> None:
    model = ScriptedModel([text_response("many words in this answer")])
    received: list[StreamChunk] = []

    async def consume() -> None:
        async for chunk in model.stream(_request()):
            received.append(chunk)
            if len(received) == 2:
                asyncio.current_task().cancel()  # type: ignore[union-attr]

    task = asyncio.create_task(consume())
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(received) == 2
