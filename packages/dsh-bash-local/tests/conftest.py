"""Fixtures shared by the dsh-bash-local tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh_bash_local import LocalBashConfig, LocalBashExecutor, _fd_child


@pytest.fixture
async def executor(tmp_path: Path) -> AsyncIterator[LocalBashExecutor]:
    """An executor with a short grace, small caps, spilling under the test's tmp dir."""
    config = LocalBashConfig(
        cwd=tmp_path,
        grace=0.5,
        max_output_bytes=100,
        max_spill_bytes=1024 * 1024,
        spill_dir=tmp_path / "spill-parent",
    )
    (tmp_path / "spill-parent").mkdir()
    async with LocalBashExecutor(config) as running:
        yield running


@pytest.fixture(params=["pidfd", "transport"])
def spawn_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per spawn path: pidfd (Linux) and the portable loop transport."""
    if request.param == "pidfd" and not _fd_child.PIDFD_AVAILABLE:
        pytest.skip("this host has no pidfds (os.pidfd_open failed)")
    if request.param == "transport":
        monkeypatch.setattr(_fd_child, "PIDFD_AVAILABLE", False)
    return str(request.param)
