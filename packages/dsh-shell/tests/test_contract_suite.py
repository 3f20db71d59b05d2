"""The executor contract suite itself: its shape, its report, and that it catches breakage."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dsh_shell import ShellExecutor
from dsh_shell.testing import (
    CAPABILITIES,
    CLAUSES,
    ExecutorContract,
    ExecutorFixture,
    overrides_without_xfail,
    validate,
)

# Each broken behaviour of the leaky executor and the clause that must catch it.
CAUGHT = [
    "env_inherited_dsh_keys_are_absent",
    "env_credential_shaped_names_are_scrubbed",
    "env_bash_env_and_env_are_scrubbed",
    "timeout_kills_the_whole_process_group",
    "cancellation_kills_the_group_and_reports_aborted",
    "env_exported_functions_and_shell_options_are_scrubbed",
    "timeout_kills_descendants_that_left_the_group",
]
# Behaviours the leaky executor gets right: the suite must not fail them.
HELD = [
    "exit_code_is_reported",
    "stdin_is_given_to_the_command",
    "env_terminal_defaults_are_set",
    "env_cannot_displace_dsh_env",
    "env_dsh_env_beats_inherited_values",
]


@pytest.mark.parametrize("clause_id", CAUGHT)
def test_the_suite_fails_the_clause_a_broken_executor_breaks(
    leaky_fixture: Callable[[], ExecutorFixture], clause_id: str
) -> None:
    report = validate(leaky_fixture, only=[clause_id], safety_net=3)
    assert report.status(clause_id) == "fail", report.to_json()


@pytest.mark.parametrize("clause_id", HELD)
def test_the_suite_passes_what_a_broken_executor_does_right(
    leaky_fixture: Callable[[], ExecutorFixture], clause_id: str
) -> None:
    report = validate(leaky_fixture, only=[clause_id], safety_net=3)
    assert report.status(clause_id) == "pass", report.to_json()


def test_a_clause_needing_an_undeclared_capability_is_skipped_with_the_reason(
    leaky_fixture: Callable[[], ExecutorFixture],
) -> None:
    report = validate(leaky_fixture, only=["kill_is_idempotent"])
    (clause,) = report.clauses
    assert clause.status == "skip"
    assert "'background'" in clause.message


def test_the_report_is_json_serializable_with_counts(
    leaky_fixture: Callable[[], ExecutorFixture],
) -> None:
    report = validate(leaky_fixture, only=["exit_code_is_reported", "kill_is_idempotent"])
    data = json.loads(report.to_json())
    assert data["counts"] == {"pass": 1, "fail": 0, "skip": 1}
    assert [c["id"] for c in data["clauses"]] == ["exit_code_is_reported", "kill_is_idempotent"]


def test_a_failed_clause_makes_the_report_not_ok(
    leaky_fixture: Callable[[], ExecutorFixture],
) -> None:
    report = validate(leaky_fixture, only=["env_inherited_dsh_keys_are_absent"], safety_net=3)
    assert not report.ok
    assert "DSH_STALE_PARENT" in report.clauses[0].message


def test_validate_refuses_an_unknown_clause_id(
    leaky_fixture: Callable[[], ExecutorFixture],
) -> None:
    with pytest.raises(KeyError, match="no_such_clause"):
        validate(leaky_fixture, only=["no_such_clause"])


def test_every_clause_is_one_test_method_of_the_base_class() -> None:
    methods = {name for name in dir(ExecutorContract) if name.startswith("test_")}
    assert methods == {f"test_{c}" for c in CLAUSES} | {"test_contract_overrides_are_marked_xfail"}


def test_every_clause_has_a_description_and_known_capabilities() -> None:
    for clause in CLAUSES.values():
        assert clause.description, clause.id
        assert clause.requires <= CAPABILITIES, clause.id


def test_overriding_a_clause_without_xfail_is_reported() -> None:
    class Overriding(ExecutorContract):
        def test_exit_code_is_reported(self) -> None:
            """Silently replaced."""

    assert overrides_without_xfail(Overriding) == ["test_exit_code_is_reported"]


def test_overriding_a_clause_with_xfail_and_a_reason_is_allowed() -> None:
    class Marked(ExecutorContract):
        @pytest.mark.xfail(reason="this executor cannot do that yet")
        def test_exit_code_is_reported(self) -> None:
            """Known gap."""

    assert overrides_without_xfail(Marked) == []


def test_overriding_a_clause_with_xfail_but_no_reason_is_reported() -> None:
    class Unexplained(ExecutorContract):
        @pytest.mark.xfail
        def test_exit_code_is_reported(self) -> None:
            """No reason given."""

    assert overrides_without_xfail(Unexplained) == ["test_exit_code_is_reported"]


def test_an_unknown_capability_is_refused() -> None:
    with pytest.raises(ValueError, match="sandbox"):
        ExecutorFixture(capabilities=frozenset({"sandbox"}), make=lambda: None)  # type: ignore[arg-type,return-value]


def test_importing_the_seam_and_its_suite_does_not_import_pytest(tmp_path: Path) -> None:
    code = "import sys, dsh_shell, dsh_shell.testing; print('pytest' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert result.stdout.strip() == "False"


def _unmakeable() -> ExecutorFixture:
    def make() -> ShellExecutor:
        raise RuntimeError("no executor")

    return ExecutorFixture(capabilities=frozenset(), make=make)


def test_only_clauses_needing_an_undeclared_capability_are_skipped() -> None:
    report = validate(_unmakeable, safety_net=1)
    skipped = {c.id for c in report.clauses if c.status == "skip"}
    assert skipped == {c.id for c in CLAUSES.values() if c.requires}
    assert {c.status for c in report.clauses if c.id not in skipped} == {"fail"}


def test_the_child_process_capability_needs_a_child_factory() -> None:
    with pytest.raises(ValueError, match="child_factory"):
        ExecutorFixture(capabilities=frozenset({"child_process"}), make=lambda: None)  # type: ignore[arg-type,return-value]


def test_a_child_factory_must_name_module_and_function() -> None:
    with pytest.raises(ValueError, match="module:function"):
        ExecutorFixture(
            capabilities=frozenset({"child_process"}),
            make=lambda: None,  # type: ignore[arg-type,return-value]
            child_factory="no_colon_here",
        )


def test_the_child_reports_a_factory_that_cannot_be_loaded(tmp_path: Path) -> None:
    fixture = ExecutorFixture(
        capabilities=frozenset({"local_processes", "child_process"}),
        make=lambda: None,  # type: ignore[arg-type,return-value]
        child_factory=f"{tmp_path / 'missing.py'}:make",
    )
    report = validate(
        lambda: fixture, only=["stdin_is_not_inherited_from_the_executor_process"], safety_net=3
    )
    (clause,) = report.clauses
    assert clause.status == "fail"
    assert "without reporting" in clause.message
