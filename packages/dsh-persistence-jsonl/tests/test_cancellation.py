"""Cancellation never cuts a mutation in half, and never leaks ownership."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
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


@pytest.mark.parametrize("access", ["read", "write"])
async def test_an_open_in_flight_when_aclose_runs_hands_out_nothing_and_keeps_no_claim(
    tmp_path: Path, access: str
) -> None:
    """aclose() while storage is opening a session: the open raises the closed error, and a
    fresh instance can take the session for writing (no lock outlives the closed one)."""
    from dsh_persistence import PersistenceClosedError
    from dsh_session import SessionHeader

    first = JsonlPersistence(tmp_path)
    handle = await first.create(SessionHeader(id="s1", created_at=1, cwd="/tmp"))
    await handle.flush()
    await handle.close()
    opening = asyncio.ensure_future(first.open("s1", access))  # type: ignore[arg-type]
    await asyncio.sleep(0)  # the open is now waiting on storage
    await first.aclose()
    with pytest.raises(PersistenceClosedError, match="cannot open session 's1'"):
        await opening
    second = JsonlPersistence(tmp_path)
    async with await second.open("s1", "write"):
        pass
    await second.aclose()


async def test_a_create_in_flight_when_aclose_runs_hands_out_nothing(tmp_path: Path) -> None:
    from dsh_persistence import PersistenceClosedError
    from dsh_session import SessionHeader

    first = JsonlPersistence(tmp_path)
    creating = asyncio.ensure_future(first.create(SessionHeader(id="s2", created_at=1)))
    await asyncio.sleep(0)
    await first.aclose()
    with pytest.raises(PersistenceClosedError, match="cannot create session 's2'"):
        await creating
    second = JsonlPersistence(tmp_path)
    assert await second.stat("s2") is None
    async with await second.create(SessionHeader(id="s2", created_at=1)):
        pass
    await second.aclose()
