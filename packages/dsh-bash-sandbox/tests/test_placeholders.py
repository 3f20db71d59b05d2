"""Placeholders left behind by a harness killed with ``kill -9`` are removed by the next
executor that starts; a user's own empty folder and a placeholder a live command holds are
never touched (issue 32)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from dsh_bash_sandbox import SandboxExecutor
from dsh_shell import SandboxPolicy, ShellExecRequest

if TYPE_CHECKING:
    from conftest import FakeInner  # the fixture's type (conftest is not importable)

_CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from dsh_bash_sandbox import SandboxExecutor
    from dsh_shell import SandboxPolicy, ShellExecRequest, resolve_request

    class Stuck:
        # An inner executor that never returns from start: the placeholders stay held.
        def resolve(self, request):
            return resolve_request(request, default_workdir=None, default_timeout=60,
                max_timeout=600, default_stdout_max_bytes=10_000)
        def start(self, spec):
            print("holding", flush=True)
            time.sleep(3600)

    async def main():
        project, registry, bwrap = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
        executor = SandboxExecutor(Stuck(), bwrap=bwrap, placeholder_registry=registry)
        policy = SandboxPolicy(workspace=project)
        executor.start(executor.resolve(ShellExecRequest("true", workdir=project, sandbox=policy)))

    asyncio.run(main())
    """
)


def _hold_then_kill(project: Path, registry: Path) -> None:
    """A child process holds the placeholders of ``project`` and is killed with SIGKILL."""
    bwrap = next(p for p in ("/usr/bin/bwrap", "/bin/bwrap") if os.path.exists(p))
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(project), str(registry), bwrap],
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == "holding\n"  # returns at once if the child dies
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)


async def test_placeholders_of_a_killed_harness_are_removed_when_an_executor_starts(
    inner: FakeInner, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".dsh").mkdir()  # the user's own (empty) folder: never touched
    registry = tmp_path / "registry"
    _hold_then_kill(project, registry)
    left = sorted(p.name for p in project.iterdir())
    assert left == [".claude", ".codex", ".dsh", ".git"]  # the kill left the placeholders
    assert oct((project / ".git").stat().st_mode & 0o7777) == oct(0o1555)
    executor = SandboxExecutor(inner, placeholder_registry=registry)
    assert sorted(p.name for p in project.iterdir()) == [".dsh"]
    assert list(registry.glob("*.json")) == []
    await executor.aclose()


async def test_a_placeholder_a_live_command_holds_is_not_swept(
    inner: FakeInner, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    registry = tmp_path / "registry"
    first = SandboxExecutor(inner, placeholder_registry=registry)
    policy = SandboxPolicy(workspace=project)
    process = first.start(
        first.resolve(ShellExecRequest("sleep 30", workdir=project, sandbox=policy))
    )
    assert (project / ".git").is_dir()
    second = SandboxExecutor(inner, placeholder_registry=registry)  # sweeps: nothing stale
    assert (project / ".git").is_dir()
    assert len(list(registry.glob("*.json"))) == 4
    process.kill()
    await process.wait()
    assert list(project.iterdir()) == []
    assert list(registry.glob("*.json")) == []
    await first.aclose()
    await second.aclose()
