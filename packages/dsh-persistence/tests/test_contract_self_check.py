"""The contract cannot be weakened silently: overrides need xfail(reason=...), skips need a
missing capability."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_persistence.testing import CLAUSES, PersistenceContract, PersistenceFixture

SELF_CHECK = "test_clauses_are_not_overridden_without_xfail_DO_NOT_OVERRIDE"


def _self_check(cls: type) -> None:
    getattr(cls(), SELF_CHECK)()


def test_every_clause_is_a_test_of_the_base_class() -> None:
    for clause in CLAUSES:
        test = getattr(PersistenceContract, f"test_{clause.id}")
        assert test.__doc__ == clause.summary


def test_untouched_subclass_passes_the_self_check() -> None:
    class Untouched(PersistenceContract):
        pass

    _self_check(Untouched)


def test_override_without_xfail_fails_the_self_check() -> None:
    class Weakened(PersistenceContract):
        def test_append_requires_contiguous_seqs(self) -> None:
            pass

    with pytest.raises(pytest.fail.Exception, match="test_append_requires_contiguous_seqs"):
        _self_check(Weakened)


def test_override_marked_xfail_with_a_reason_passes_the_self_check() -> None:
    class KnownGap(PersistenceContract):
        @pytest.mark.xfail(reason="this backend cannot detect gaps yet", strict=True)
        def test_append_requires_contiguous_seqs(self) -> None:
            raise AssertionError("known gap")

    _self_check(KnownGap)


def test_override_marked_xfail_without_a_reason_fails_the_self_check() -> None:
    class Unexplained(PersistenceContract):
        @pytest.mark.xfail
        def test_append_requires_contiguous_seqs(self) -> None:
            raise AssertionError("known gap")

    with pytest.raises(pytest.fail.Exception, match=r"without pytest\.mark\.xfail"):
        _self_check(Unexplained)


def test_removed_clause_fails_the_self_check() -> None:
    class Removed(PersistenceContract):
        test_revision_is_equal_iff_the_log_is_unchanged = None

    with pytest.raises(pytest.fail.Exception, match="was removed"):
        _self_check(Removed)


def test_overriding_the_self_check_itself_is_refused_at_class_creation() -> None:
    with pytest.raises(TypeError, match=SELF_CHECK):

        class Cheater(PersistenceContract):
            def test_clauses_are_not_overridden_without_xfail_DO_NOT_OVERRIDE(self) -> None:
                pass


def test_clause_test_skips_naming_the_missing_capability(tmp_path: Path) -> None:
    fixture = PersistenceFixture(factory=object)
    test = PersistenceContract.test_torn_tail_is_never_served_and_is_repaired  # type: ignore[attr-defined]
    with pytest.raises(pytest.skip.Exception, match="'corrupt_tail', 'reopen'"):
        test(PersistenceContract(), fixture)


def test_clause_test_refuses_a_fixture_of_the_wrong_type() -> None:
    test = PersistenceContract.test_round_trip_through_one_write_handle  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="must return a PersistenceFixture"):
        test(PersistenceContract(), object())


def test_clause_failure_propagates_as_an_assertion_with_the_clause_message(
    tmp_path: Path, variants: dict[str, type]
) -> None:
    backend = variants["BrokenNoContiguityCheck"]
    fixture = PersistenceFixture(factory=lambda: backend(tmp_path))
    test = PersistenceContract.test_append_requires_contiguous_seqs  # type: ignore[attr-defined]
    with pytest.raises(AssertionError, match="re-append: expected ValueError"):
        test(PersistenceContract(), fixture)


def test_marking_the_shared_clause_function_fails_the_self_check() -> None:
    class Untouched(PersistenceContract):
        pass

    shared = PersistenceContract.test_append_requires_contiguous_seqs  # type: ignore[attr-defined]
    shared.pytestmark = [pytest.mark.xfail(reason="marks every backend").mark]
    try:
        with pytest.raises(pytest.fail.Exception, match="shared test function"):
            _self_check(Untouched)
    finally:
        del shared.pytestmark
