"""Fixtures shared by the dsh-bash-local tests."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import settings

from dsh_bash_local import LocalBashConfig, LocalBashExecutor, _fd_child

# Properties must not fail on a slow or loaded machine: no per-example deadline.
settings.register_profile("dsh", deadline=None)
settings.load_profile("dsh")


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


def _load_local_executors() -> ModuleType:
    name = "dsh_bash_local_test_executors"
    if name not in sys.modules:  # tests import with --import-mode=importlib: load it by path
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).with_name("local_executors.py")
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def local_executors() -> ModuleType:
    """``local_executors.py``: the real executor and its broken variants, built from names."""
    return _load_local_executors()
