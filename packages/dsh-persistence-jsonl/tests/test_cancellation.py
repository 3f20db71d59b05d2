"""Cancellation never cuts a mutation in half, and never leaks ownership."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from dsh_persistence_jsonl import JsonlPersistence

Factory = Callable[[], JsonlPersistence]


async def _cancel_soon(awaitable: Any) -> None:
    task = asyncio.ensure_future(awaitable)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancelled_first_append_leaves_storage_and_handle_in_step(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    handle = await store.create(mk.header())
    await _cancel_soon(handle.append(mk.one_turn()))
    stored = len(await handle.read())
    assert stored in (0, 6)
    await handle.append(mk.one_turn(stored, turn=2))
    await handle.close()
    async with await make_store().open("s-1", "read") as reader:
        assert [e.seq for e in await reader.read()] == list(range(stored + 6))
    await store.aclose()


async def test_a_cancelled_flush_still_completes_its_sync(make_store: Factory, mk: Any) -> None:
    store = make_store()
    handle = await store.create(mk.header())
    await _cancel_soon(handle.flush())
    assert await make_store().stat("s-1") is not None
    await handle.close()
    await store.aclose()


async def test_a_cancelled_write_open_releases_its_lock(make_store: Factory, mk: Any) -> None:
    store = make_store()
    async with await store.create(mk.header()) as handle:
        await handle.append(mk.one_turn())
    await _cancel_soon(store.open("s-1", "write"))
    async with await make_store().open("s-1", "write") as writer:
        await writer.append(mk.one_turn(6, turn=2))
    async with await store.open("s-1", "write") as writer:
        assert len(await writer.read()) == 12
    await store.aclose()


async def test_a_cancelled_close_still_releases_ownership(make_store: Factory, mk: Any) -> None:
    store = make_store()
    handle = await store.create(mk.header())
    await handle.append(mk.one_turn())
    await _cancel_soon(handle.close())
    await asyncio.sleep(0.05)
    async with await make_store().open("s-1", "write"):
        pass
    await store.aclose()
