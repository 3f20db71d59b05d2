"""The contract suite's strength, tested: each broken copy of the subprocess executor fails a
named clause with a message that points at its defect, and the real executor passes those
clauses.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from dsh_shell.testing import CAPABILITIES, ExecutorFixture, validate

SAFETY_NET = 5.0  # seconds a clause waits for an expected state: a hang guard, not a bar
SPILL_CAP = 4 * 1024 * 1024


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
    "BrokenIgnoresTimeout": {
        "timeout_reports_timed_out_not_aborted": "run() returning after its 1 s timeout",
    },
    "BrokenLeaksTheParentEnvironment": {
        "env_inherited_dsh_keys_are_absent": (
            "inherited managed names reached the child: ['DSH_STALE_PARENT', 'dsh_stale_lower']"
        ),
        "env_credential_shaped_names_are_scrubbed": "credential-shaped names reached the child",
        "env_bash_env_and_env_are_scrubbed": "a startup file was sourced",
    },
    "BrokenMergesStderrIntoStdout": {
        "stdout_and_stderr_stay_separate": "streams ('out\\nerr\\n', '')",
    },
    "BrokenKillsOnlyTheProcessGroup": {
        "timeout_kills_descendants_that_left_the_group": "still alive: {'own_group': ",
        "cancellation_kills_descendants_that_left_the_group": "still alive: {'own_group': ",
    },
}


def make_fixture(variant: str | None, spill_dir: Path) -> Callable[[], ExecutorFixture]:
    """``make_fixture`` for ``validate()``: a broken variant, or (``None``) the real executor."""
    args: dict[str, Any] = {
        "grace": 0.5,
        "max_spill_bytes": SPILL_CAP,
        "spill_dir": str(spill_dir),
        "variant": variant,
    }
    return lambda: ExecutorFixture(
        capabilities=CAPABILITIES,
        make=lambda: variants.make_executor(args),
        spill_cap_bytes=SPILL_CAP,
        child_factory=f"{variants.__file__}:make_executor",
        child_args=args,
    )


def test_every_variant_is_checked() -> None:
    assert sorted(BROKEN) == sorted(variants.VARIANTS)


@pytest.mark.parametrize(("variant", "expected"), sorted(BROKEN.items()))
def test_broken_variant_fails_the_clauses_naming_its_defect(
    variant: str, expected: dict[str, str], tmp_path: Path
) -> None:
    report = validate(make_fixture(variant, tmp_path), only=expected, safety_net=SAFETY_NET)
    outcomes = {c.id: (c.status, c.message) for c in report.clauses}
    assert {i: status for i, (status, _) in outcomes.items()} == dict.fromkeys(expected, "fail")
    for clause_id, fragment in expected.items():
        assert fragment in outcomes[clause_id][1], outcomes[clause_id]


@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_the_real_executor_passes_the_clauses_each_variant_fails(
    variant: str, tmp_path: Path
) -> None:
    report = validate(make_fixture(None, tmp_path), only=BROKEN[variant], safety_net=SAFETY_NET)
    assert report.ok, report.to_json()
