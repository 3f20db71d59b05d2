"""``validate()``: the clauses without pytest, as a JSON-serializable report."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dsh_persistence.testing._catalog import CLAUSES
from dsh_persistence.testing._fixture import PersistenceFixture
from dsh_persistence.testing._runner import Clause, Status, run_clause


@dataclass(frozen=True)
class ClauseResult:
    """The outcome of one clause: ``status`` is ``"pass"``, ``"fail"`` or ``"skip"``; ``message``
    says why it failed or was skipped."""

    id: str
    status: Status
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serializable data."""
        return {"id": self.id, "status": self.status, "message": self.message}


@dataclass(frozen=True)
class ContractReport:
    """Per-clause results of ``validate()``."""

    results: tuple[ClauseResult, ...]

    def __getitem__(self, clause_id: str) -> ClauseResult:
        for result in self.results:
            if result.id == clause_id:
                return result
        raise KeyError(clause_id)

    def ids(self, status: Status) -> list[str]:
        """The ids of the clauses with ``status``."""
        return [r.id for r in self.results if r.status == status]

    @property
    def passed(self) -> bool:
        """True when no clause failed (skipped ones do not count against it)."""
        return not self.ids("fail")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serializable data: counts and every result."""
        return {
            "passed": self.passed,
            "counts": {s: len(self.ids(s)) for s in ("pass", "fail", "skip")},
            "results": [r.to_dict() for r in self.results],
        }

    def to_json(self) -> str:
        """``to_dict()`` as JSON text."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)


def _describe(error: BaseException) -> str:
    if isinstance(error, AssertionError):
        return str(error) or "assertion failed"
    last = traceback.extract_tb(error.__traceback__)[-1:] if error.__traceback__ else []
    where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(error).__name__}: {error}{where}"


def _run_one(item: Clause, make_fixture: Callable[[], PersistenceFixture]) -> ClauseResult:
    fixture = make_fixture()
    reason = item.skip_reason(fixture)
    if reason is not None:
        asyncio.run(fixture.run_cleanup())
        return ClauseResult(item.id, "skip", reason)
    try:
        run_clause(item, fixture)
    except Exception as error:
        return ClauseResult(item.id, "fail", _describe(error))
    return ClauseResult(item.id, "pass")


def validate(
    make_fixture: Callable[[], PersistenceFixture], *, clauses: Iterable[str] | None = None
) -> ContractReport:
    """Run the contract clauses (all, or the ids in ``clauses``) and report each one.

    ``make_fixture()`` is called once per clause and must return a ``PersistenceFixture`` over
    fresh, empty storage. Each clause runs in its own thread and event loop (a clause stuck in a
    backend that never yields fails at the clause timeout); called from inside a running loop,
    the clauses are run from a worker thread.
    """
    wanted = None if clauses is None else set(clauses)
    if wanted is not None:
        unknown = sorted(wanted - {c.id for c in CLAUSES})
        if unknown:
            raise ValueError(f"unknown clause ids: {unknown}")
    selected = [c for c in CLAUSES if wanted is None or c.id in wanted]
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return ContractReport(tuple(_run_one(c, make_fixture) for c in selected))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        results = pool.submit(lambda: tuple(_run_one(c, make_fixture) for c in selected))
        return ContractReport(results.result())
