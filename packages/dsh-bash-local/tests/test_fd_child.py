"""The pidfd spawn path's own failure handling."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_bash_local import LocalBashExecutor, _fd_child
from dsh_shell import ShellExecRequest, ShellSpawnError

pytestmark = pytest.mark.skipif(
    not _fd_child.PIDFD_AVAILABLE, reason="this host has no pidfds (os.pidfd_open failed)"
)


async def test_a_child_that_cannot_be_watched_is_killed_and_reported(
    executor: LocalBashExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_pidfd(pid: int, flags: int = 0) -> int:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    spec = executor.resolve(ShellExecRequest("sleep 600", workdir=tmp_path))
    with pytest.raises(ShellSpawnError, match="cannot watch the child"):
        await executor.run(spec)


async def test_descriptors_are_released_after_runs(executor: LocalBashExecutor) -> None:
    await executor.run(executor.resolve(ShellExecRequest("true")))
    before = _open_descriptors()
    for _ in range(20):
        await executor.run(executor.resolve(ShellExecRequest("cat; seq 1 500", stdin="x" * 5000)))
        await executor.run(executor.resolve(ShellExecRequest("sleep 5", timeout=0.05)))
    assert _open_descriptors() == before


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))
