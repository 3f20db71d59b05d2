"""The local executor fails closed on a spec that must be confined: it never runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_bash_local import LocalBashExecutor
from dsh_shell import SandboxMode, SandboxPolicy, SandboxUnavailableError, ShellExecRequest

_CAUSE = "the local executor does not confine commands"
_FIX = "use dsh-bash-sandbox's SandboxExecutor or mode danger-full-access"


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
async def test_run_refuses_a_confined_spec_and_starts_nothing(
    executor: LocalBashExecutor, tmp_path: Path, mode: SandboxMode
) -> None:
    marker = tmp_path / "ran"
    policy = SandboxPolicy(mode=mode, workspace=tmp_path)
    spec = executor.resolve(ShellExecRequest(f"touch {marker}", sandbox=policy))
    with pytest.raises(SandboxUnavailableError) as caught:
        await executor.run(spec)
    assert (caught.value.cause, caught.value.fix) == (_CAUSE, _FIX)
    assert str(caught.value) == f"sandbox unavailable: {_CAUSE}; fix: {_FIX}"
    assert not marker.exists()


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
async def test_start_refuses_a_confined_spec_and_starts_nothing(
    executor: LocalBashExecutor, tmp_path: Path, mode: SandboxMode
) -> None:
    marker = tmp_path / "ran"
    policy = SandboxPolicy(mode=mode, workspace=tmp_path)
    spec = executor.resolve(ShellExecRequest(f"touch {marker}", sandbox=policy))
    with pytest.raises(SandboxUnavailableError, match="does not confine"):
        executor.start(spec)
    await executor.aclose()
    assert not marker.exists()


async def test_danger_full_access_and_no_policy_run_unconfined(
    executor: LocalBashExecutor, tmp_path: Path
) -> None:
    full = SandboxPolicy(mode="danger-full-access")
    for index, policy in enumerate((full, None)):
        marker = tmp_path / f"ran-{index}"
        result = await executor.run(
            executor.resolve(ShellExecRequest(f"touch {marker}", sandbox=policy))
        )
        assert (result.exit_code, result.sandbox_denied) == (0, None)
        assert marker.exists()
        process = executor.start(
            executor.resolve(ShellExecRequest(f"touch {marker}-bg", sandbox=policy))
        )
        assert await process.wait() == "completed"
        assert marker.with_name(f"{marker.name}-bg").exists()
