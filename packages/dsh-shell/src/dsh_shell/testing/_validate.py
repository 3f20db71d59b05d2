"""Running clauses without pytest: `run_clause` and the JSON-serializable `validate` report."""

from __future__ import annotations

import asyncio
import inspect
import json
import tempfile
import traceback
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from dsh_shell.testing._catalog import CLAUSES
from dsh_shell.testing._context import SAFETY_NET, ClauseContext
from dsh_shell.testing._fixture import ExecutorFixture
from dsh_shell.testing._registry import Clause

ClauseStatus = Literal["pass", "fail", "skip"]


class ClauseSkipped(Exception):
    """A clause needs a capability the fixture does not declare; ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def missing_capability(clause: Clause, fixture: ExecutorFixture) -> str | None:
    """The skip reason when ``fixture`` lacks a capability ``clause`` needs, else None."""
    missing = sorted(clause.requires - fixture.capabilities)
    if not missing:
        return None
    return f"needs capability {', '.join(map(repr, missing))}, which the fixture does not declare"


async def _run_async(
    clause: Clause, fixture: ExecutorFixture, scratch: Path, safety_net: float
) -> None:
    executor = fixture.make()
    ctx = ClauseContext(fixture, executor, scratch, safety_net=safety_net)
    try:
        await asyncio.wait_for(clause.body(ctx), timeout=safety_net * 10)
    except TimeoutError:
        raise AssertionError(
            f"clause did not finish within {safety_net * 10:g} s (a hang)"
        ) from None
    finally:
        ctx.cleanup()
        aclose = getattr(executor, "aclose", None)
        if aclose is not None and inspect.iscoroutinefunction(aclose):
            await aclose()


def run_clause(
    clause_id: str, fixture: ExecutorFixture, scratch: Path, *, safety_net: float = SAFETY_NET
) -> None:
    """Run one clause in a fresh event loop; raise `ClauseSkipped` or an AssertionError."""
    clause = CLAUSES[clause_id]
    reason = missing_capability(clause, fixture)
    if reason is not None:
        raise ClauseSkipped(reason)
    asyncio.run(_run_async(clause, fixture, scratch, safety_net))


@dataclass(frozen=True, slots=True)
class ClauseReport:
    """The outcome of one clause: ``pass``, ``fail`` (with ``message``) or ``skip`` (reason)."""

    id: str
    description: str
    status: ClauseStatus
    message: str = ""


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """Every clause's outcome; `to_dict`/`to_json` give the JSON form."""

    clauses: list[ClauseReport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no clause failed."""
        return all(c.status != "fail" for c in self.clauses)

    def status(self, clause_id: str) -> ClauseStatus:
        """The status of one clause."""
        for report in self.clauses:
            if report.id == clause_id:
                return report.status
        raise KeyError(clause_id)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict: counts and one entry per clause."""
        counts = {s: sum(c.status == s for c in self.clauses) for s in ("pass", "fail", "skip")}
        return {"ok": self.ok, "counts": counts, "clauses": [asdict(c) for c in self.clauses]}

    def to_json(self) -> str:
        """`to_dict` as indented JSON text."""
        return json.dumps(self.to_dict(), indent=2)


def validate(
    make_fixture: Callable[[], ExecutorFixture],
    *,
    only: Iterable[str] | None = None,
    safety_net: float = SAFETY_NET,
) -> ValidationReport:
    """Run the contract without pytest and report every clause.

    ``make_fixture`` is called once per clause (a fresh fixture each time). ``only`` limits
    the run to some clause ids (unknown ids raise KeyError). ``safety_net`` is how many
    seconds a clause waits for an expected state before failing. Must be called without a
    running event loop (each clause gets its own).
    """
    ids = list(CLAUSES) if only is None else list(only)
    for clause_id in ids:
        if clause_id not in CLAUSES:
            raise KeyError(f"unknown clause id {clause_id!r}")
    reports: list[ClauseReport] = []
    for clause_id in ids:
        clause = CLAUSES[clause_id]
        with tempfile.TemporaryDirectory(prefix="dsh-shell-contract-") as scratch:
            try:
                run_clause(clause_id, make_fixture(), Path(scratch), safety_net=safety_net)
            except ClauseSkipped as skip:
                reports.append(ClauseReport(clause_id, clause.description, "skip", skip.reason))
            except Exception as error:  # a clause failure of any kind is reported, not raised
                message = "".join(traceback.format_exception_only(error)).strip()
                reports.append(ClauseReport(clause_id, clause.description, "fail", message))
            else:
                reports.append(ClauseReport(clause_id, clause.description, "pass"))
    return ValidationReport(reports)
