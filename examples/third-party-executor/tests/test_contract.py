"""The subprocess executor against the seam's published contract suite.

One fixture is all the suite needs. The executor declares every capability: commands are
processes of this host (``local_processes``) whose ``$$`` are pids of this host (``host_pids``),
``start()`` works (``background``), spill files are local (``spill``), and `make_executor`
rebuilds the same executor in a child Python process (``child_process``), where the suite checks
that a command never reads the executor process's own stdin.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from example_dsh_shell_subprocess import SubprocessExecutor

from dsh_shell.testing import CAPABILITIES, ExecutorContract, ExecutorFixture

SPILL_CAP = 4 * 1024 * 1024  # a small spill cap and a short grace keep the suite quick


def make_executor(args: dict[str, Any]) -> SubprocessExecutor:
    """The executor ``args`` (JSON: keyword arguments) describe; the child process calls it."""
    return SubprocessExecutor(**args)


class TestSubprocessExecutor(ExecutorContract):
    @pytest.fixture
    def executor_fixture(self, tmp_path: Path) -> ExecutorFixture:
        args = {"grace": 0.5, "max_spill_bytes": SPILL_CAP, "spill_dir": str(tmp_path)}
        return ExecutorFixture(
            capabilities=CAPABILITIES,
            make=lambda: make_executor(args),  # a new executor for every clause
            spill_cap_bytes=SPILL_CAP,
            child_factory=f"{__file__}:make_executor",
            child_args=args,
        )
