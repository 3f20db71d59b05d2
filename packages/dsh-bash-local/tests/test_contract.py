"""LocalBashExecutor against every clause of the dsh-shell executor contract."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from dsh_bash_local import _fd_child
from dsh_shell.testing import CAPABILITIES, ExecutorContract, ExecutorFixture

SPILL_CAP = 4 * 1024 * 1024


def local_fixture(
    executors: ModuleType, args: dict[str, Any], *, spill_cap: int = SPILL_CAP
) -> ExecutorFixture:
    """The real executor built from ``args``, here and (``child_process``) in a child."""
    return ExecutorFixture(
        capabilities=CAPABILITIES,
        make=lambda: executors.make_local(args),
        spill_cap_bytes=spill_cap,
        child_factory=f"{executors.FACTORIES}:make_local",
        child_args=args,
    )


def _quick(spill_dir: Path, **extra: Any) -> dict[str, Any]:
    """A short grace and a small spill cap keep the suite quick."""
    return {"grace": 0.5, "max_spill_bytes": SPILL_CAP, "spill_dir": str(spill_dir), **extra}


class TestLocalBashExecutor(ExecutorContract):
    """The spawn path this host prefers (pidfd on Linux), with a short grace."""

    @pytest.fixture
    def executor_fixture(self, tmp_path: Path, local_executors: ModuleType) -> ExecutorFixture:
        return local_fixture(local_executors, _quick(tmp_path))


class TestLocalBashExecutorWithoutPidfd(ExecutorContract):
    """The portable path (the loop's subprocess transport) used where pidfds are missing."""

    @pytest.fixture
    def executor_fixture(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local_executors: ModuleType
    ) -> ExecutorFixture:
        monkeypatch.setattr(_fd_child, "PIDFD_AVAILABLE", False)
        return local_fixture(local_executors, _quick(tmp_path, pidfd=False))


class TestLocalBashExecutorDefaults(ExecutorContract):
    """The default configuration (3 s grace, 64 MiB spill cap) holds the contract too."""

    @pytest.fixture
    def executor_fixture(self, local_executors: ModuleType) -> ExecutorFixture:
        return local_fixture(local_executors, {}, spill_cap=64 * 1024 * 1024)
