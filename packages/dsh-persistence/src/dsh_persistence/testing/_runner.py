"""Clauses and how one runs: a fresh context over a fresh fixture, every instance closed after."""

from __future__ import annotations

import asyncio
import contextlib
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
    ``fixture.clause_timeout`` seconds fails as a probable deadlock.
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


Status = Literal["pass", "fail", "skip"]
