"""Closing a harness: its parts closed in order whatever failed before, every failure raised
together, and the children that were cut short named for the operator."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

from dsh_agent_loop import LoopAgent

__all__ = [
    "close_each",
    "close_together",
    "interrupted_child_notice",
    "raise_together",
    "running_children",
]

Closer = Callable[[], Awaitable[object]]
"""What closes one part (``aclose``)."""


def running_children(live: Iterable[LoopAgent]) -> list[str]:
    """The ids of the delegated sessions among ``live`` still running a turn: closing cancels
    them (their logs end the turn aborted, resumable)."""
    return [
        agent.id
        for agent in live
        if agent.session.header.parent_session is not None and agent.status == "running"
    ]


def interrupted_child_notice(session_id: str) -> str:
    """The line an operator reads (on stderr) for a child that was still running when its
    harness closed (`Harness.interrupted_children`)."""
    return (
        f"child session {session_id} was still running; resume it with "
        f"dsh run --resume {session_id}"
    )


async def close_together(closers: Iterable[Closer]) -> list[BaseException]:
    """Run ``closers`` at once; what each raised (nothing is re-raised here)."""
    results = await asyncio.gather(*(close() for close in closers), return_exceptions=True)
    return [result for result in results if isinstance(result, BaseException)]


async def close_each(closers: Iterable[Closer]) -> list[BaseException]:
    """Run ``closers`` one after another, each whatever the ones before raised; the
    exceptions they raised (a cancellation is not caught: it ends the close)."""
    failures: list[BaseException] = []
    for close in closers:
        try:
            await close()
        except Exception as error:
            failures.append(error)
    return failures


def raise_together(message: str, failures: list[BaseException]) -> None:
    """Raise ``failures`` as one ``ExceptionGroup`` named ``message``; nothing when empty."""
    if failures:
        raise ExceptionGroup(message, [*failures])  # type: ignore[type-var]
