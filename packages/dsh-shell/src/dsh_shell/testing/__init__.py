"""The executor contract suite: what every `dsh_shell.ShellExecutor` must do.

`ExecutorContract` (pytest base class; needs ``dsh-shell[testing]``) and `validate` (no pytest)
run the same clauses, listed in `CLAUSES`, against the executor an `ExecutorFixture` makes.
Importing this module does not import pytest; ``ExecutorContract`` is loaded on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_shell.testing._catalog import CLAUSES
from dsh_shell.testing._context import ContractViolation
from dsh_shell.testing._fixture import (
    BACKGROUND,
    CAPABILITIES,
    CHILD_PROCESS,
    HOST_PIDS,
    LIVE_OUTPUT,
    LOCAL_PROCESSES,
    SPILL,
    ExecutorFixture,
)
from dsh_shell.testing._registry import Clause
from dsh_shell.testing._validate import ClauseReport, ValidationReport, validate

if TYPE_CHECKING:
    from dsh_shell.testing._pytest_suite import ExecutorContract, overrides_without_xfail

__all__ = [
    "BACKGROUND",
    "CAPABILITIES",
    "CHILD_PROCESS",
    "CLAUSES",
    "HOST_PIDS",
    "LIVE_OUTPUT",
    "LOCAL_PROCESSES",
    "SPILL",
    "Clause",
    "ClauseReport",
    "ContractViolation",
    "ExecutorContract",
    "ExecutorFixture",
    "ValidationReport",
    "overrides_without_xfail",
    "validate",
]


def __getattr__(name: str) -> Any:
    if name in {"ExecutorContract", "overrides_without_xfail"}:
        from dsh_shell.testing import _pytest_suite

        return getattr(_pytest_suite, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
