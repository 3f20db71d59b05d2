"""The contract suite's strength, tested: each broken copy of the in-memory backend fails a named
clause with a message that points at its defect, and the backends they break pass those clauses.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from example_dsh_persistence_memory import MemoryPersistence, MemoryStore

from dsh_persistence.testing import REOPEN, PersistenceFixture, validate


def _load(name: str) -> ModuleType:
    # The tests run with --import-mode=importlib, so a sibling module is loaded by its path.
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


variants = _load("broken_variants")

# variant -> {clause id: a piece of the failure message that names the defect}
BROKEN: dict[str, dict[str, str]] = {
    "BrokenSizeNeverGrows": {"size_bytes_grows_with_appends": "size_bytes did not grow"},
    "BrokenUpdatedAtFrozen": {"updated_at_is_epoch_ms_and_moves_forward": "updated_at stayed"},
    "BrokenUpdatedAtInSeconds": {
        "updated_at_is_epoch_ms_and_moves_forward": "is not epoch milliseconds"
    },
    "BrokenEmptyAppendBumpsRevision": {"empty_append_changes_nothing": "stat().revision"},
    "BrokenEmptyAppendMaterializes": {
        "empty_append_changes_nothing": "after append([]): a fresh instance's stat"
    },
    "BrokenLosesParentSession": {
        "stored_header_keeps_every_field": "header.parent_session: expected 'parent', got None"
    },
    "BrokenLosesCwd": {
        "stat_and_list_agree_with_handles": "compared to the created one",
        "stored_header_keeps_every_field": "header.cwd: expected '/work/child', got None",
    },
    "BrokenReadsShareStoredObjectsInAList": {
        "read_results_belong_to_the_caller": "a read after mutating an earlier result"
    },
    "BrokenReadsShareStoredObjectsInATuple": {
        "read_results_belong_to_the_caller": "a read after mutating an earlier result"
    },
    "BrokenServiceFlushSkipsTheOldest": {
        "service_flush_flushes_every_pending_write_handle": "a fresh read of 'pending-reopened'"
    },
    "BrokenServiceFlushSkipsTheOldestOfSeveral": {
        "service_flush_materializes_every_one_of_several_pending_sessions": (
            "a fresh list() after flush() omits 'several-empty-0'"
        )
    },
    "BrokenFlushPublishesNothing": {
        "flushed_events_are_visible_to_a_fresh_instance": "expected 6 events",
        "service_flush_flushes_every_pending_write_handle": "a fresh read of",
    },
    "BrokenRejectedBatchStoresItsPrefix": {
        "rejected_batch_stores_nothing_not_even_its_valid_prefix": "got 8",
    },
    "BrokenListMissesASession": {"stat_and_list_agree_with_handles": "the ids list() returns"},
    "BrokenListShowsErasedSessions": {
        "close_without_append_erases_a_created_session": "list() still shows the erased session"
    },
    "BrokenReversedReads": {
        "round_trip_through_one_write_handle": "read(): event at index 0 differs",
        "reads_during_appends_see_growing_contiguous_prefixes": "a read returned seqs [7, 6",
    },
    "BrokenShiftedReads": {"round_trip_through_one_write_handle": "read(3): expected 3 events"},
    "BrokenNoContiguityCheck": {"append_requires_contiguous_seqs": "expected ValueError"},
    "BrokenAllowsASecondWriter": {
        "single_write_owner_per_instance": "expected SessionAlreadyOwnedError",
        "write_owner_excludes_writers_of_a_fresh_instance": "expected SessionAlreadyOwnedError",
    },
    "BrokenKeepsOwnershipAfterClose": {
        "leaving_async_with_releases_ownership": "SessionAlreadyOwnedError",
        "fresh_instance_continues_at_the_committed_next_seq": "SessionAlreadyOwnedError",
    },
    "BrokenClosedHandleStillWorks": {
        "closed_handle_refuses_every_operation": "expected SessionHandleClosedError"
    },
    "BrokenReadHandleAppends": {
        "read_handle_refuses_append_and_flush": "expected SessionReadOnlyError"
    },
    "BrokenRevisionNotBumped": {
        "revision_is_equal_iff_the_log_is_unchanged": "did not change the revision"
    },
    "BrokenInheritedCountLost": {
        "seeded_session_keeps_its_inherited_event_count": "a reader's inherited_event_count"
    },
    "BrokenReadIgnoresItsOffset": {
        "export_writes_the_header_and_one_line_per_event": "where seq 8 belongs; export stopped",
        "read_with_a_huge_offset_or_length_is_empty_or_to_the_end": "expected 0 events",
    },
    "BrokenReadNeverReturns": {
        "export_writes_the_header_and_one_line_per_event": (
            "clause export_writes_the_header_and_one_line_per_event did not finish within 0.5 s"
        ),
    },
    "BrokenHugeReadRaises": {
        "read_with_a_huge_offset_or_length_is_empty_or_to_the_end": "ValueError: Indices"
    },
    "BrokenAcceptsReservedTypes": {
        "reserved_packed_row_types_are_refused_at_append": "expected ValueError, nothing"
    },
    "BrokenRefusesLoneSurrogatesInHeaders": {
        "lone_surrogates_and_non_bmp_text_in_a_header_round_trip": "UnicodeEncodeError"
    },
}


def make_fixture(backend: type[MemoryPersistence]) -> Callable[[], PersistenceFixture]:
    """``make_fixture`` for ``validate()``: a fresh store per clause (of the backend's kind)."""

    def make() -> PersistenceFixture:
        store: MemoryStore = getattr(backend, "store_type", MemoryStore)()
        return PersistenceFixture(
            factory=lambda: backend(store),
            capabilities=frozenset({REOPEN}),
            clause_timeout=0.5 if backend.__name__ == "BrokenReadNeverReturns" else 60.0,
        )

    return make


def test_every_variant_is_checked() -> None:
    assert sorted(BROKEN) == sorted(variants.VARIANTS)


@pytest.mark.parametrize(("variant", "expected"), sorted(BROKEN.items()))
def test_broken_variant_fails_the_clauses_naming_its_defect(
    variant: str, expected: dict[str, str]
) -> None:
    report = validate(make_fixture(variants.VARIANTS[variant]), clauses=expected)
    outcomes = {r.id: (r.status, r.message or "") for r in report.results}
    assert {i: status for i, (status, _) in outcomes.items()} == dict.fromkeys(expected, "fail")
    for clause_id, fragment in expected.items():
        assert fragment in outcomes[clause_id][1], outcomes[clause_id]


@pytest.mark.parametrize("backend", sorted(variants.CORRECT))
def test_the_backends_the_variants_break_pass_every_clause(backend: str) -> None:
    report = validate(make_fixture(variants.CORRECT[backend]))
    assert report.passed, report.to_json()
