"""Clauses and how one runs: a fresh context over a fresh fixture, every instance closed after."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from dsh_persistence._protocols import SessionPersistence
from dsh_persistence.testing._fixture import CAPABILITIES, PersistenceFixture

ClauseBody = Callable[["ClauseContext"], Awaitable[None]]


@dataclass(frozen=True)
class Clause:
    """One rule of the contract: an id (the pytest test is ``test_<id>``), what it checks, and
    the capabilities it needs."""

    id: str
    summary: str
    requires: frozenset[str]
    body: ClauseBody

    def missing(self, fixture: PersistenceFixture) -> list[str]:
        """The required capabilities ``fixture`` does not declare."""
        return sorted(self.requires - fixture.capabilities)

    def skip_reason(self, fixture: PersistenceFixture) -> str | None:
        """Why this clause does not apply to ``fixture``, or ``None`` when it does."""
        missing = self.missing(fixture)
        if not missing:
            return None
        return "the backend does not declare capability " + ", ".join(repr(m) for m in missing)


def clause(*requires: str) -> Callable[[ClauseBody], Clause]:
    """Make an async ``body(ctx)`` a clause; its name (minus ``clause_``) is the id and its
    docstring's first paragraph the summary."""
    unknown = set(requires) - CAPABILITIES.keys()
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)}")

    def wrap(body: ClauseBody) -> Clause:
        name = getattr(body, "__name__", "")
        doc = (getattr(body, "__doc__", None) or "").strip().split("\n\n")[0]
        return Clause(
            id=name.removeprefix("clause_"),
            summary=" ".join(doc.split()),
            requires=frozenset(requires),
            body=body,
        )

    return wrap


class ClauseContext:
    """What a clause body works with: fresh instances (closed at the end) and the hooks."""

    def __init__(self, fixture: PersistenceFixture) -> None:
        self.fixture = fixture
        self._instances: list[SessionPersistence] = []

    def has(self, capability: str) -> bool:
        """Whether the backend declares ``capability``."""
        return capability in self.fixture.capabilities

    async def instance(self) -> SessionPersistence:
        """A new backend instance over the test's storage (closed when the clause ends)."""
        persistence = await self.fixture.instance()
        self._instances.append(persistence)
        return persistence

    async def corrupt_tail(self, session_id: str) -> None:
        """Run the backend's ``corrupt_tail`` hook."""
        await self.fixture.run_corrupt_tail(session_id)

    async def damage_event(self, session_id: str, seq: int) -> None:
        """Run the backend's ``damage_event`` hook."""
        await self.fixture.run_damage_event(session_id, seq)

    async def replace_record(self, session_id: str, seq: int, record: bytes) -> None:
        """Run the backend's ``replace_record`` hook."""
        await self.fixture.run_replace_record(session_id, seq, record)

    async def close_all(self) -> None:
        """``aclose()`` every instance this clause made; the first failure is raised."""
        first: BaseException | None = None
        for persistence in reversed(self._instances):
            try:
                await persistence.aclose()
            except Exception as error:
                first = first or error
        self._instances.clear()
        if first is not None:
            raise first


async def run_body(item: Clause, fixture: PersistenceFixture) -> None:
    """Run one clause against ``fixture`` (whose capabilities it needs) and clean up after it.

    A failure of the body wins over a failure of the teardown; a body that does not finish in
    ``fixture.clause_timeout`` seconds fails as a probable deadlock. This timeout only fires when
    the backend yields to the event loop; ``run_clause`` also stops one that never does.
    """
    ctx = ClauseContext(fixture)
    try:
        try:
            async with asyncio.timeout(fixture.clause_timeout):
                await item.body(ctx)
        except TimeoutError as error:
            raise AssertionError(
                f"clause {item.id} did not finish within {fixture.clause_timeout} s "
                "(a deadlock or a lost wake-up?)"
            ) from error
        except BaseException:
            with contextlib.suppress(Exception):
                await ctx.close_all()
            raise
        await ctx.close_all()
    finally:
        await fixture.run_cleanup()


class ClauseStopped(BaseException):
    """Raised inside a clause's thread to stop a body that overran its timeout without ever
    yielding to the event loop. A ``BaseException``, so a backend's ``except Exception`` does not
    swallow it."""


_GRACE = 5.0  # at most this long after clause_timeout for the cooperative timeout to fire
_STOP_TRIES = 5  # how often the stop is raised in the thread (a backend may catch one)


def run_clause(item: Clause, fixture: PersistenceFixture) -> None:
    """Run ``run_body(item, fixture)`` in its own thread with its own event loop and re-raise
    what it raised; a clause that cannot be stopped by its event-loop timeout fails too.

    A backend that never yields (a loop that ignores its arguments, a busy wait) stops the
    cooperative timeout from firing. Then, once the timeout and a grace period passed,
    ``ClauseStopped`` is raised inside the thread (``PyThreadState_SetAsyncExc``: it interrupts
    Python code, not a blocking system call) and the clause fails with an ``AssertionError``
    naming it and the timeout. A thread that does not stop even then is left behind as a daemon.
    """
    outcome: list[BaseException] = []

    def body() -> None:
        try:
            asyncio.run(run_body(item, fixture))
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=body, name=f"contract-clause-{item.id}", daemon=True)
    thread.start()
    grace = min(_GRACE, fixture.clause_timeout)
    thread.join(fixture.clause_timeout + grace)
    if thread.is_alive():
        stopped = _stop(thread, grace)
        how = "was stopped" if stopped else "could not be stopped (its thread is left running)"
        raise AssertionError(
            f"clause {item.id} did not finish within {fixture.clause_timeout} s and never gave "
            f"the event loop a chance to time it out; it {how} (a backend operation that never "
            "yields or never returns: a read that ignores its range, a busy wait?)"
        )
    if outcome:
        raise outcome[0]


def _stop(thread: threading.Thread, grace: float) -> bool:
    """Raise ``ClauseStopped`` in ``thread`` until it ends; whether it did."""
    ident = thread.ident
    assert ident is not None
    for _ in range(_STOP_TRIES):
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(ident), ctypes.py_object(ClauseStopped)
        )
        thread.join(grace)
        if not thread.is_alive():
            return True
    return False


Status = Literal["pass", "fail", "skip"]
