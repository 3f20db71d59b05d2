"""``PersistenceContract``: the clauses as pytest tests, one test id per clause."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from dsh_persistence.testing._catalog import CLAUSES
from dsh_persistence.testing._fixture import PersistenceFixture
from dsh_persistence.testing._runner import Clause, run_clause

_SELF_CHECK = "test_clauses_are_not_overridden_without_xfail_DO_NOT_OVERRIDE"


def _make_test(item: Clause) -> Callable[[Any, PersistenceFixture], None]:
    def test(self: Any, persistence_fixture: PersistenceFixture) -> None:
        if not isinstance(persistence_fixture, PersistenceFixture):
            raise TypeError(
                "the persistence_fixture fixture must return a PersistenceFixture, got "
                f"{type(persistence_fixture).__name__}"
            )
        reason = item.skip_reason(persistence_fixture)
        if reason is not None:
            asyncio.run(persistence_fixture.run_cleanup())
            pytest.skip(reason)
        run_clause(item, persistence_fixture)

    test.__name__ = test.__qualname__ = f"test_{item.id}"
    test.__doc__ = item.summary
    test._dsh_contract_clause = item.id  # type: ignore[attr-defined]
    return test


def _has_xfail(function: object) -> bool:
    return any(getattr(m, "name", None) == "xfail" for m in getattr(function, "pytestmark", []))


def _xfail_reason(function: object) -> str | None:
    for mark in getattr(function, "pytestmark", []):
        if getattr(mark, "name", None) == "xfail":
            reason = mark.kwargs.get("reason")
            return str(reason) if reason else None
    return None


class PersistenceContract:
    """The persistence contract as pytest tests: subclass it and provide one fixture.

    ```python
    class TestMyBackend(PersistenceContract):
        @pytest.fixture
        def persistence_fixture(self, tmp_path) -> PersistenceFixture:
            return PersistenceFixture(factory=lambda: MyBackend(tmp_path), capabilities=...)
    ```

    Each clause is a test ``test_<clause id>`` (a sync test that runs its body in its own thread
    and event loop, so pytest-asyncio is not needed, and a backend that never yields still fails
    at the clause timeout). A clause needing a capability the fixture does not declare is
    skipped with that reason. To mark a clause as a known failure, override
    it with ``pytest.mark.xfail(reason=...)``; overriding without it fails the self-check.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if _SELF_CHECK in vars(cls):
            raise TypeError(f"{cls.__name__} must not override {_SELF_CHECK}")

    def test_clauses_are_not_overridden_without_xfail_DO_NOT_OVERRIDE(self) -> None:
        """Every clause test is the suite's own, or an override marked xfail with a reason."""
        problems: list[str] = []
        for item in CLAUSES:
            name = f"test_{item.id}"
            attribute = getattr(type(self), name, None)
            if getattr(attribute, "_dsh_contract_clause", None) == item.id:
                if _has_xfail(attribute):
                    problems.append(
                        f"{name}: an xfail mark was put on the suite's shared test function, "
                        "which marks it for every backend; override it in your class instead"
                    )
                continue
            if attribute is None or not callable(attribute):
                problems.append(f"{name} was removed")
            elif _xfail_reason(attribute) is None:
                problems.append(f"{name} is overridden without pytest.mark.xfail(reason=...)")
        if problems:
            pytest.fail("the persistence contract was weakened: " + "; ".join(problems))


for _clause in CLAUSES:
    setattr(PersistenceContract, f"test_{_clause.id}", _make_test(_clause))
del _clause
