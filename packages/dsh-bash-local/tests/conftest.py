"""Fixtures shared by the dsh-bash-local tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh_bash_local import LocalBashConfig, LocalBashExecutor


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
