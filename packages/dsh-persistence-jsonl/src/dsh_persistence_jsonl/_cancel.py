"""Mutations that cancellation cannot cut in half."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def run_to_completion(
    work: Awaitable[T], *, on_cancelled: Callable[[T], None] | None = None
) -> T:
    """Await ``work`` in its own task; if the caller is cancelled meanwhile, let ``work`` finish
    (so storage and in-memory state stay in step), hand a successful result to
    ``on_cancelled`` (to release what it holds), then re-raise the cancellation."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            try:
                await asyncio.wait([task])
            except asyncio.CancelledError:
                continue
        if not task.cancelled():
            error = task.exception()
            if error is None and on_cancelled is not None:
                on_cancelled(task.result())
        raise
