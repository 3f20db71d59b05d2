"""Assertions the clauses use: plain functions (no reliance on pytest's assert rewriting, and
still checking under ``python -O``) that raise ``ContractViolation`` with an actionable message."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Sequence
from typing import Any

from dsh_persistence._protocols import SessionPersistence
from dsh_persistence._snapshot import SessionSnapshot
from dsh_session import SessionEvent, SessionHeader, encode_event


class ContractViolation(AssertionError):
    """A backend broke a clause of the persistence contract; the message says how."""


def expect(condition: object, message: str) -> None:
    """Fail with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ContractViolation(message)


def expect_equal(actual: object, expected: object, what: str) -> None:
    """Fail unless ``actual == expected``."""
    if actual != expected:
        raise ContractViolation(f"{what}: expected {expected!r}, got {actual!r}")


def expect_header(actual: object, expected: SessionHeader, what: str) -> None:
    """Fail unless ``actual`` is a header equal to ``expected`` field by field (the message
    names the first field that differs)."""
    expect(isinstance(actual, SessionHeader), f"{what}: not a SessionHeader: {actual!r}")
    for name in type(expected).model_fields:
        got, want = getattr(actual, name, None), getattr(expected, name)
        if got != want:
            raise ContractViolation(f"{what}.{name}: expected {want!r}, got {got!r}")


async def expect_stat(
    persistence: SessionPersistence, session_id: str, what: str
) -> SessionSnapshot:
    """``stat(session_id)``, failing when it is ``None``."""
    snapshot = await persistence.stat(session_id)
    if snapshot is None:
        raise ContractViolation(f"{what}: stat({session_id!r}) returned None")
    return snapshot


async def expect_listed(
    persistence: SessionPersistence, session_id: str, what: str
) -> SessionSnapshot:
    """The one snapshot ``list()`` gives for ``session_id``, failing unless there is one."""
    found = [s for s in await persistence.list() if s.header.id == session_id]
    if len(found) != 1:
        raise ContractViolation(f"{what}: list() gave {len(found)} snapshots of {session_id!r}")
    return found[0]


def _short(events: Sequence[SessionEvent]) -> str:
    shown = ", ".join(f"{e.seq}:{e.type}" for e in list(events)[:12])
    more = f", … ({len(events)} in all)" if len(events) > 12 else ""
    return f"[{shown}{more}]"


def expect_events(
    actual: Sequence[SessionEvent], expected: Sequence[SessionEvent], what: str
) -> None:
    """Fail unless both logs encode to the same bytes, event by event."""
    if len(actual) != len(expected):
        raise ContractViolation(
            f"{what}: expected {len(expected)} events {_short(expected)}, got {len(actual)} "
            f"{_short(actual)}"
        )
    for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
        got_bytes, want_bytes = encode_event(got), encode_event(want)
        if got_bytes != want_bytes:
            raise ContractViolation(
                f"{what}: event at index {index} differs: expected {want_bytes[:200]!r}, "
                f"got {got_bytes[:200]!r}"
            )


def _names(kind: type[BaseException] | tuple[type[BaseException], ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


async def expect_raises(
    kind: type[BaseException] | tuple[type[BaseException], ...],
    awaitable: Awaitable[Any],
    what: str,
    *,
    match: str | None = None,
) -> BaseException:
    """Await ``awaitable`` and fail unless it raises ``kind`` (whose message matches ``match``).

    Returns the exception. Anything a successful call returned is closed when it can be.
    """
    try:
        result = await awaitable
    except kind as error:
        if match is not None and not re.search(match, str(error)):
            raise ContractViolation(
                f"{what}: raised {type(error).__name__} as expected, but its message "
                f"{str(error)!r} does not match {match!r}"
            ) from error
        return error
    except Exception as error:
        raise ContractViolation(
            f"{what}: expected {_names(kind)}, got {type(error).__name__}: {error}"
        ) from error
    close = getattr(result, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()
    raise ContractViolation(f"{what}: expected {_names(kind)}, nothing was raised")
