"""Tests of the tests: each deliberately broken executor fails the clauses naming its defect.

The variants (``local_executors.BROKEN``) are the real executor with one bug each; the reference
executor passes every clause they fail, so each failure is the bug's and nothing else's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from dsh_shell.testing import CAPABILITIES, ExecutorFixture, validate

SPILL_CAP = 4 * 1024 * 1024
SAFETY_NET = 5.0  # seconds a clause waits for an expected state; a hang guard, not a bar

# variant -> {clause id: a piece of the failure message that names the defect}
BROKEN: dict[str, dict[str, str]] = {
    "BrokenIgnoresTimeout": {
        "timeout_reports_timed_out_not_aborted": "run() returning after its 1 s timeout",
    },
    "BrokenLosesExitCode": {"exit_code_is_reported": "`exit 3` gave (0, None, False, False)"},
    "BrokenUnboundedOutput": {
        "output_over_the_cap_keeps_the_tail": "over-cap output was not marked truncated",
    },
    "BrokenUnboundedSpill": {
        "spill_is_bounded_by_the_spill_cap": "over the 4194304-byte spill cap names a spill file",
    },
    "BrokenNeverSpills": {
        "truncated_output_is_spilled_to_a_private_file": "a truncated stream has no spill_path",
        "spill_is_bounded_by_the_spill_cap": "(the spill cap) has no spill file",
    },
    "BrokenIgnoresEnv": {
        "env_explicit_env_overrides_defaults_and_scrub": "env TERM did not win",
        "concurrent_runs_stay_isolated": "runs saw each other's input or environment",
    },
    "BrokenIgnoresDshEnv": {
        "env_dsh_env_reaches_the_command": "dsh_env values differ in the child",
        "env_dsh_env_beats_inherited_values": "got None",
    },
    "BrokenInheritedDshWins": {"env_dsh_env_beats_inherited_values": "got 'stale-parent'"},
    "BrokenResolveDropsReservedEnv": {
        "env_cannot_displace_dsh_env": "resolve() accepted env key 'DSH_SESSION_ID'",
    },
    "BrokenInheritsStdin": {
        "stdin_is_not_inherited_from_the_executor_process": "read the executor process's stdin",
    },
    "BrokenDropsStdin": {"stdin_is_given_to_the_command": "`cat` with stdin gave (0, False, '')"},
    "BrokenStdinPipeLeftOpen": {
        "stdin_is_given_to_the_command": "`cat` with stdin gave (None, True, 'piped line\\n')",
    },
    "BrokenIgnoresWorkdir": {
        "cwd_defaults_to_the_resolved_workdir": "cwd-at-run",
        "cwd_override_is_used": "pwd",
    },
    "BrokenCancelLeavesTheCommandRunning": {
        "cancellation_kills_the_group_and_reports_aborted": "still alive",
    },
    "BrokenCancelledCallerGetsAnotherError": {
        "cancelled_task_starts_nothing": "RuntimeError: refusing to run in a cancelled task",
    },
    "BrokenOutputOnlyAtTheEnd": {
        "live_output_arrives_while_the_command_runs": "was not told 'first-line' while it ran",
        "a_failing_listener_does_not_stop_the_command": "RuntimeError: a broken display",
    },
    "BrokenLiveOutputOnOneStream": {"live_output_joins_to_the_result": "on_output joined to"},
}
# Extra configuration a variant needs to show its bug quickly (still a valid configuration).
CONFIG: dict[str, dict[str, Any]] = {
    "BrokenStdinPipeLeftOpen": {"timeout": 2, "max_timeout": 2},
}


@pytest.fixture
def fixture_of(
    local_executors: ModuleType, tmp_path: Path
) -> Callable[[str | None], Callable[[], ExecutorFixture]]:
    """A fixture factory for a broken variant (or, for ``None``, the reference executor)."""

    def make(variant: str | None) -> Callable[[], ExecutorFixture]:
        args: dict[str, Any] = {
            "grace": 0.5,
            "max_spill_bytes": SPILL_CAP,
            "spill_dir": str(tmp_path),
            **CONFIG.get(variant or "", {}),
        }
        if variant is not None:
            args["variant"] = variant
        name = "make_broken" if variant is not None else "make_local"
        return lambda: ExecutorFixture(
            capabilities=CAPABILITIES,
            make=lambda: getattr(local_executors, name)(args),
            spill_cap_bytes=SPILL_CAP,
            child_factory=f"{local_executors.FACTORIES}:{name}",
            child_args=args,
        )

    return make


def test_every_broken_variant_is_checked(local_executors: ModuleType) -> None:
    assert sorted(BROKEN) == sorted(local_executors.BROKEN)


@pytest.mark.parametrize(("variant", "expected"), sorted(BROKEN.items()))
def test_broken_executor_fails_the_clauses_naming_its_defect(
    variant: str,
    expected: dict[str, str],
    fixture_of: Callable[[str | None], Callable[[], ExecutorFixture]],
) -> None:
    report = validate(fixture_of(variant), only=expected, safety_net=SAFETY_NET)
    outcomes = {c.id: (c.status, c.message) for c in report.clauses}
    assert {i: status for i, (status, _) in outcomes.items()} == dict.fromkeys(expected, "fail")
    for clause_id, fragment in expected.items():
        assert fragment in outcomes[clause_id][1], outcomes[clause_id]
    assert not report.ok


@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_the_real_executor_passes_the_clauses_each_broken_variant_fails(
    variant: str, fixture_of: Callable[[str | None], Callable[[], ExecutorFixture]]
) -> None:
    report = validate(fixture_of(None), only=BROKEN[variant], safety_net=SAFETY_NET)
    assert report.ok, report.to_json()
