"""The clause runner stops a clause whose backend never yields, and fails it by name."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import pytest

from dsh_persistence.testing import PersistenceContract, PersistenceFixture, validate

CLAUSE = "round_trip_through_one_write_handle"


def _quick(make: Callable[[], PersistenceFixture]) -> Callable[[], PersistenceFixture]:
    return lambda: dataclasses.replace(make(), clause_timeout=0.5)


def _clause_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("contract-clause-")]


def test_validate_fails_a_clause_stuck_in_a_backend_that_never_yields(
    variants: dict[str, type],
    make_scratch_fixture: Callable[..., Callable[[], PersistenceFixture]],
) -> None:
    make = _quick(make_scratch_fixture(variants["BrokenReadNeverYields"]))
    result = validate(make, clauses=[CLAUSE])[CLAUSE]
    assert result.status == "fail"
    assert f"clause {CLAUSE} did not finish within 0.5 s" in (result.message or "")
    assert "it was stopped" in (result.message or "")
    assert _clause_threads() == []


def test_persistence_contract_fails_a_clause_stuck_in_a_backend_that_never_yields(
    variants: dict[str, type],
    make_scratch_fixture: Callable[..., Callable[[], PersistenceFixture]],
) -> None:
    fixture = _quick(make_scratch_fixture(variants["BrokenReadNeverYields"]))()

    class TestStuck(PersistenceContract):
        pass

    with pytest.raises(AssertionError, match=f"clause {CLAUSE} did not finish within 0.5 s"):
        getattr(TestStuck(), f"test_{CLAUSE}")(fixture)
    assert _clause_threads() == []


def test_a_clause_failure_in_its_thread_reaches_the_caller(
    variants: dict[str, type],
    make_scratch_fixture: Callable[..., Callable[[], PersistenceFixture]],
) -> None:
    fixture = make_scratch_fixture(variants["BrokenNoContiguityCheck"])()

    class TestBroken(PersistenceContract):
        pass

    with pytest.raises(AssertionError, match="expected ValueError"):
        TestBroken().test_append_requires_contiguous_seqs(fixture)  # type: ignore[attr-defined]
