"""Tests of the tests: each deliberately broken backend fails the clauses naming its defect."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dsh_persistence.testing import PersistenceFixture, validate

# variant -> {clause id: a piece of the failure message that names the defect}
BROKEN: dict[str, dict[str, str]] = {
    "BrokenWorksAfterClose": {
        "a_closed_backend_refuses_every_call_naming_it": "expected PersistenceClosedError",
    },
    "BrokenDropsLastEventOnReopen": {
        "fresh_instance_continues_at_the_committed_next_seq": "expected seq 5",
        "flushed_events_are_visible_to_a_fresh_instance": "expected 6 events",
    },
    "BrokenAllowsTwoWriters": {
        "single_write_owner_per_instance": "expected SessionAlreadyOwnedError",
        "write_owner_excludes_writers_of_a_fresh_instance": "expected SessionAlreadyOwnedError",
        "write_owner_in_a_child_process_excludes_this_process": "expected SessionAlreadyOwned",
        "child_process_is_refused_while_this_process_writes": "'status': 'opened'",
        "seeded_random_operations_agree_with_a_model": "expected SessionAlreadyOwnedError",
    },
    "BrokenKeepsOwnershipAfterClose": {
        "single_write_owner_per_instance": "SessionAlreadyOwnedError",
        "leaving_async_with_releases_ownership": "SessionAlreadyOwnedError",
        "write_owner_excludes_writers_of_a_fresh_instance": "SessionAlreadyOwnedError",
    },
    "BrokenKeepsTornTail": {"torn_tail_is_never_served_and_is_repaired": "corrupt"},
    "BrokenUnshieldedClose": {
        "close_is_idempotent_and_shielded_from_cancellation": "SessionAlreadyOwnedError"
    },
    "BrokenKeepsUnmaterializedSessions": {
        "close_without_append_erases_a_created_session": "expected None",
        "unmaterialized_session_never_exists_for_a_fresh_instance": "expected None",
        "duplicate_create_while_pending_is_refused": "SessionAlreadyExistsError",
    },
    "BrokenNoContiguityCheck": {
        "append_requires_contiguous_seqs": "expected ValueError",
        "seeded_random_operations_agree_with_a_model": "append_out_of_order",
    },
    "BrokenStaleRevision": {
        "revision_is_equal_iff_the_log_is_unchanged": "did not change the revision"
    },
    "BrokenLockFileOwnership": {
        "ownership_is_released_when_the_owning_child_is_killed": "SessionAlreadyOwnedError"
    },
    "BrokenOpaqueUnknownTypesRefusedOnRead": {
        "unknown_event_type_is_read_as_opaque_data": "SessionFormatUnsupportedError"
    },
    "BrokenReadersTripOverWritesInProgress": {
        "reads_during_appends_see_growing_contiguous_prefixes": "corrupt"
    },
    "BrokenTruncatesDamage": {
        "damage_in_the_middle_is_corruption_and_is_never_repaired": "returned 3 events instead"
    },
    "BrokenTruncatesThenRefuses": {
        "damage_in_the_middle_is_corruption_and_is_never_repaired": "the second open(write)"
    },
    "BrokenServiceFlushSkipsTheOldest": {
        "service_flush_materializes_every_one_of_several_pending_sessions": (
            "a fresh list() after flush() omits 'several-empty-0'"
        ),
        "service_flush_in_a_child_makes_every_handle_durable_before_it_is_killed": (
            "omits 'killed-after-flush-empty-0'"
        ),
    },
    "BrokenMalformedRecordsEscapeAsTypeErrors": {
        "malformed_stored_records_are_corruption_naming_the_session_and_seq": (
            "TypeError: list indices must be integers"
        ),
    },
    "BrokenCorruptionNamesNoSession": {
        "malformed_stored_records_are_corruption_naming_the_session_and_seq": (
            "session '' is corrupt"
        ),
    },
    "BrokenFailedOpenKeepsClaim": {
        "write_open_refuses_an_unknown_non_ignorable_type": "got SessionAlreadyOwnedError"
    },
}


@pytest.mark.parametrize(("variant", "expected"), sorted(BROKEN.items()))
def test_broken_backend_fails_the_clauses_naming_its_defect(
    variant: str,
    expected: dict[str, str],
    variants: dict[str, type],
    make_scratch_fixture: Callable[..., Callable[[], PersistenceFixture]],
) -> None:
    report = validate(make_scratch_fixture(variants[variant]), clauses=expected)
    outcomes = {r.id: (r.status, r.message or "") for r in report.results}
    assert {i: status for i, (status, _) in outcomes.items()} == dict.fromkeys(expected, "fail")
    for clause_id, fragment in expected.items():
        assert fragment in outcomes[clause_id][1], outcomes[clause_id]
    assert not report.passed


@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_the_reference_backend_passes_the_clauses_each_broken_variant_fails(
    variant: str,
    variants: dict[str, type],
    make_scratch_fixture: Callable[..., Callable[[], PersistenceFixture]],
) -> None:
    report = validate(
        make_scratch_fixture(variants["DirPersistence"]), clauses=list(BROKEN[variant])
    )
    assert report.passed, report.to_json()
