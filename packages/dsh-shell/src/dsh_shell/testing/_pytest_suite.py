"""`ExecutorContract`: the pytest base class a third-party executor's tests subclass."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh_shell.testing._catalog import CLAUSES
from dsh_shell.testing._fixture import ExecutorFixture
from dsh_shell.testing._validate import ClauseSkipped, run_clause


def _clause_test(clause_id: str) -> Callable[..., None]:
    def test(self: ExecutorContract, executor_fixture: ExecutorFixture, tmp_path: Path) -> None:
        try:
            run_clause(clause_id, executor_fixture, tmp_path)
        except ClauseSkipped as skip:
            pytest.skip(skip.reason)

    test.__name__ = f"test_{clause_id}"
    test.__qualname__ = f"ExecutorContract.test_{clause_id}"
    test.__doc__ = CLAUSES[clause_id].description
    return test


def _has_xfail_with_reason(function: Any) -> bool:
    for mark in getattr(function, "pytestmark", []):
        if getattr(mark, "name", None) == "xfail" and mark.kwargs.get("reason"):
            return True
    return False


def overrides_without_xfail(cls: type) -> list[str]:
    """Clause tests ``cls`` overrides without ``@pytest.mark.xfail(reason=...)``."""
    bad: list[str] = []
    for clause_id in CLAUSES:
        name = f"test_{clause_id}"
        function = getattr(cls, name, None)
        if function is getattr(ExecutorContract, name) or _has_xfail_with_reason(function):
            continue
        bad.append(name)
    return bad


class ExecutorContract:
    """Subclass (as ``TestSomething``) and provide the ``executor_fixture`` fixture.

    Every clause of `dsh_shell.testing.CLAUSES` is a test method ``test_<clause id>``. A
    clause that needs a capability the fixture does not declare is skipped with that reason.
    Overriding a clause is allowed only to mark it ``@pytest.mark.xfail(reason=...)``;
    `test_contract_overrides_are_marked_xfail` fails otherwise. Tests are synchronous (each
    clause runs in its own event loop), so no pytest-asyncio mode is required.
    """

    @pytest.fixture
    def executor_fixture(self) -> ExecutorFixture:
        """Override: return the `ExecutorFixture` of the executor under test."""
        raise NotImplementedError("subclasses of ExecutorContract provide executor_fixture")

    def test_contract_overrides_are_marked_xfail(self) -> None:
        """Every overridden clause carries xfail with a reason."""
        bad = overrides_without_xfail(type(self))
        assert not bad, f"clauses overridden without @pytest.mark.xfail(reason=...): {bad}"


for _clause_id in CLAUSES:
    setattr(ExecutorContract, f"test_{_clause_id}", _clause_test(_clause_id))
