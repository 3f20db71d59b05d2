"""flush_handles: every handle is flushed past failures; closing handles count as flushed."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_persistence import SessionHandleClosedError, flush_handles


class _Handle:
    def __init__(self, name: str, outcome: Exception | None = None) -> None:
        self.name = name
        self.outcome = outcome
        self.flushed = False

    async def flush(self) -> None:
        if self.outcome is not None:
            raise self.outcome
        self.flushed = True


async def test_every_handle_is_flushed() -> None:
    handles = [_Handle("a"), _Handle("b")]
    await flush_handles(handles)  # type: ignore[arg-type]
    assert [h.flushed for h in handles] == [True, True]


async def test_a_closing_handle_counts_as_flushed() -> None:
    handles: list[Any] = [
        _Handle("a", SessionHandleClosedError("s1", operation="flush")),
        _Handle("b"),
    ]
    await flush_handles(handles)
    assert handles[1].flushed


async def test_failures_are_aggregated_and_do_not_stop_the_sweep() -> None:
    first, second = OSError("disk full"), RuntimeError("lost")
    handles: list[Any] = [_Handle("a", first), _Handle("b"), _Handle("c", second)]
    with pytest.raises(ExceptionGroup, match="flush failed for 2 session") as info:
        await flush_handles(handles)
    assert info.value.exceptions == (first, second)
    assert handles[1].flushed
