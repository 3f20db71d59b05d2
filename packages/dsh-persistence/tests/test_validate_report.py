"""validate(): the clauses without pytest, reported per clause as JSON-serializable data."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from dsh_persistence.testing import CLAUSES, ContractReport, PersistenceFixture, validate


def test_reference_backend_passes_every_clause_through_validate(
    variants: dict[str, type],
    make_scratch_fixture: Callable[..., Callable[[], PersistenceFixture]],
) -> None:
    report = validate(make_scratch_fixture(variants["DirPersistence"]))
    assert report.passed, report.to_json()
    assert [r.id for r in report.results] == [c.id for c in CLAUSES]
    assert report.ids("skip") == []


def test_report_is_json_serializable_with_counts_and_messages(
    variants: dict[str, type],
    make_scratch_fixture: Callable[..., Callable[[], PersistenceFixture]],
) -> None:
    clause_ids = ["append_requires_contiguous_seqs", "revision_is_equal_iff_the_log_is_unchanged"]
    report = validate(make_scratch_fixture(variants["BrokenStaleRevision"]), clauses=clause_ids)
    data = json.loads(report.to_json())
    assert data["counts"] == {"pass": 1, "fail": 1, "skip": 0}
    assert data["passed"] is False
    failed = report["revision_is_equal_iff_the_log_is_unchanged"]
    assert failed.status == "fail"
    assert "revision" in (failed.message or "")
    assert data["results"][1] == failed.to_dict()


def test_clause_needing_an_undeclared_capability_is_skipped_with_that_reason(
    tmp_path: Path, variants: dict[str, type]
) -> None:
    counter = itertools.count()
    backend = variants["DirPersistence"]

    def make() -> PersistenceFixture:
        return PersistenceFixture(factory=lambda: backend(tmp_path / str(next(counter))))

    report = validate(
        make,
        clauses=["torn_tail_is_never_served_and_is_repaired", "open_of_absent_id_is_not_found"],
    )
    skipped = report["torn_tail_is_never_served_and_is_repaired"]
    assert skipped.status == "skip"
    assert "'corrupt_tail'" in (skipped.message or "")
    assert "'reopen'" in (skipped.message or "")
    assert report["open_of_absent_id_is_not_found"].status == "pass"
    assert report.passed


def test_validate_refuses_unknown_clause_ids() -> None:
    with pytest.raises(ValueError, match="no_such_clause"):
        validate(lambda: PersistenceFixture(factory=object), clauses=["no_such_clause"])


async def test_validate_works_when_called_inside_a_running_event_loop(
    variants: dict[str, type],
    make_scratch_fixture: Callable[..., Callable[[], PersistenceFixture]],
) -> None:
    report = validate(
        make_scratch_fixture(variants["DirPersistence"]),
        clauses=["round_trip_through_one_write_handle"],
    )
    assert isinstance(report, ContractReport)
    assert report.ids("pass") == ["round_trip_through_one_write_handle"]


def test_fixture_cleanup_runs_after_every_clause(tmp_path: Path, variants: dict[str, type]) -> None:
    cleaned: list[int] = []
    backend = variants["DirPersistence"]

    def make() -> PersistenceFixture:
        return PersistenceFixture(
            factory=lambda: backend(tmp_path / str(len(cleaned))),
            cleanup=lambda: cleaned.append(1),
        )

    validate(make, clauses=[c.id for c in CLAUSES[:3]])
    assert len(cleaned) == 3


def test_clause_ids_are_unique_and_each_has_a_summary() -> None:
    ids = [c.id for c in CLAUSES]
    assert len(ids) == len(set(ids))
    assert all(c.summary for c in CLAUSES)
    assert len(CLAUSES) >= 30
