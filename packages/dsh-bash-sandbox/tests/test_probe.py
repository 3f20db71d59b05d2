"""probe_sandbox and fail-closed: a missing or broken bwrap stops every confined command."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from dsh_bash_sandbox import FIX_INSTALL, FIX_NAMESPACES, SandboxExecutor, probe_sandbox
from dsh_shell import SandboxPolicy, SandboxUnavailableError, ShellExecRequest

if TYPE_CHECKING:
    from conftest import FakeInner  # the fixture's type (conftest is not importable)

# What bwrap prints where unprivileged user namespaces are off (Debian, Ubuntu with AppArmor).
_NAMESPACE_FAILURE = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "bubblewrap 0.8.0"; exit 0; fi
echo "bwrap: No permissions to create a new namespace, likely because the kernel does not \
allow non-privileged user namespaces." >&2
exit 1
"""


@pytest.fixture
def broken_bwrap(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "bwrap"
    path.parent.mkdir()
    path.write_text(_NAMESPACE_FAILURE)
    path.chmod(0o755)
    return path


def test_the_real_bwrap_is_available_here() -> None:
    """CI installs bubblewrap (.ci/run); a machine without it fails here, loudly."""
    probe = probe_sandbox()
    assert probe.available, f"{probe.cause}; fix: {probe.fix}"
    assert (probe.cause, probe.fix) == (None, None)
    assert probe.path == shutil.which("bwrap")
    assert probe.version is not None
    assert probe.version.startswith("bubblewrap ")


def test_a_probe_is_cached_per_executable() -> None:
    assert probe_sandbox() is probe_sandbox()


def test_a_missing_bwrap_names_the_cause_and_the_install_fix(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-bwrap")
    probe = probe_sandbox(missing)
    assert not probe.available
    assert probe.path is None
    assert probe.cause == f"bwrap not found: {missing!r} is not an executable on PATH"
    assert probe.fix == FIX_INSTALL
    assert "apt-get install bubblewrap" in FIX_INSTALL
    assert "--sandbox danger-full-access" in FIX_INSTALL


def test_a_bwrap_that_cannot_create_namespaces_names_its_error(broken_bwrap: Path) -> None:
    probe = probe_sandbox(str(broken_bwrap))
    assert not probe.available
    assert probe.version == "bubblewrap 0.8.0"
    assert probe.cause is not None
    assert probe.cause.startswith(f"bwrap at {broken_bwrap} cannot create the sandbox's namespaces")
    assert "non-privileged user namespaces" in probe.cause
    assert probe.fix == FIX_NAMESPACES


@pytest.mark.parametrize("which", ["missing", "broken"])
async def test_run_and_start_fail_closed_and_run_nothing(
    which: str, broken_bwrap: Path, inner: FakeInner, workspace: Path
) -> None:
    bwrap = str(broken_bwrap) if which == "broken" else str(workspace / "no-bwrap")
    marker = workspace / "ran"
    executor = SandboxExecutor(inner, bwrap=bwrap)
    spec = executor.resolve(ShellExecRequest(f"touch {marker}", workdir=workspace))
    with pytest.raises(SandboxUnavailableError) as caught:
        await executor.run(spec)
    assert caught.value.fix == (FIX_NAMESPACES if which == "broken" else FIX_INSTALL)
    assert str(caught.value).startswith("sandbox unavailable: bwrap ")
    with pytest.raises(SandboxUnavailableError):
        executor.start(spec)
    read_only = executor.resolve(
        ShellExecRequest(
            f"touch {marker}", workdir=workspace, sandbox=SandboxPolicy(mode="read-only")
        )
    )
    with pytest.raises(SandboxUnavailableError):
        await executor.run(read_only)
    assert inner.specs == []  # the inner executor was never asked to run anything
    assert not marker.exists()
    await executor.aclose()


async def test_full_access_needs_no_bwrap(inner: FakeInner, workspace: Path) -> None:
    policy = SandboxPolicy(mode="danger-full-access")
    executor = SandboxExecutor(inner, policy=policy, bwrap=str(workspace / "no-bwrap"))
    result = await executor.run(executor.resolve(ShellExecRequest("echo hi", workdir=workspace)))
    assert result.stdout.text == "hi\n"
