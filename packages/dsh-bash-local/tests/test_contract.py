"""LocalBashExecutor against every clause of the dsh-shell executor contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_bash_local import LocalBashConfig, LocalBashExecutor, _fd_child
from dsh_shell.testing import CAPABILITIES, ExecutorContract, ExecutorFixture

SPILL_CAP = 4 * 1024 * 1024


def _quick_fixture(spill_dir: Path) -> ExecutorFixture:
    """A short grace and a small spill cap keep the suite quick."""
    config = LocalBashConfig(grace=0.5, max_spill_bytes=SPILL_CAP, spill_dir=spill_dir)
    return ExecutorFixture(
        capabilities=CAPABILITIES,
        make=lambda: LocalBashExecutor(config),
        spill_cap_bytes=SPILL_CAP,
    )


class TestLocalBashExecutor(ExecutorContract):
    """The spawn path this host prefers (pidfd on Linux), with a short grace."""

    @pytest.fixture
    def executor_fixture(self, tmp_path: Path) -> ExecutorFixture:
        return _quick_fixture(tmp_path)


class TestLocalBashExecutorWithoutPidfd(ExecutorContract):
    """The portable path (the loop's subprocess transport) used where pidfds are missing."""

    @pytest.fixture
    def executor_fixture(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ExecutorFixture:
        monkeypatch.setattr(_fd_child, "PIDFD_AVAILABLE", False)
        return _quick_fixture(tmp_path)


class TestLocalBashExecutorDefaults(ExecutorContract):
    """The default configuration (3 s grace, 64 MiB spill cap) holds the contract too."""

    @pytest.fixture
    def executor_fixture(self) -> ExecutorFixture:
        return ExecutorFixture(capabilities=CAPABILITIES, make=LocalBashExecutor)
