"""SandboxExecutor(LocalBashExecutor) in workspace-write mode against the executor contract.

Runs as its own session: ``nox -s "contract(bash-sandbox)"`` (the ``integration`` session leaves
this file to it).

The fixture declares every capability but ``host_pids``: inside the sandbox ``$$`` and ``$!``
are pids of the command's own PID namespace (the shell is pid 2), which on the host name other
processes, so the seven clauses that follow a command's family by pid in this host's ``/proc``
are skipped by the suite with that reason. ``test_pid_namespace_*`` below checks the same facts
through the namespace: after the timeout, the cancellation or the kill, no process is left in
the command's PID namespace at all, which is stronger than the clauses (it includes the setsid
double fork the local executor cannot find).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from dsh_bash_sandbox import SandboxExecutor
from dsh_shell import ShellExecRequest
from dsh_shell.testing import CAPABILITIES, HOST_PIDS, ExecutorContract, ExecutorFixture

SPILL_CAP = 4 * 1024 * 1024


def _load_factories() -> ModuleType:
    name = "dsh_sandbox_test_executors"
    if name not in sys.modules:  # tests import with --import-mode=importlib: load it by path
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).with_name("sandbox_executors.py")
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _args(tmp_path: Path) -> dict[str, Any]:
    spill = tmp_path / "spill-parent"
    spill.mkdir(exist_ok=True)
    return {"grace": 0.5, "max_spill_bytes": SPILL_CAP, "spill_dir": str(spill)}


class TestSandboxExecutorWorkspaceWrite(ExecutorContract):
    """Every capability but ``host_pids``, the default policy (workspace-write, network off),
    a short grace."""

    @pytest.fixture
    def executor_fixture(self, tmp_path: Path) -> ExecutorFixture:
        factories = _load_factories()
        args = _args(tmp_path)
        return ExecutorFixture(
            capabilities=CAPABILITIES - {HOST_PIDS},
            make=lambda: factories.make_sandbox(args),
            spill_cap_bytes=SPILL_CAP,
            child_factory=f"{factories.FACTORIES}:make_sandbox",
            child_args=args,
        )


# The same facts as the seven host_pids clauses, observed through the PID namespace.

_FAMILY = (
    "readlink /proc/self/ns/pid > ns; "
    "(trap '' TERM; exec sleep 600) & "
    "sleep 600 & "
    "set -m; sleep 600 & set +m; "
    "setsid sleep 600 & "
    "(setsid sh -c 'sleep 600 & wait' &) ; "
    "echo ready > ready; wait"
)
"""A stubborn grandchild, a child, one in its own group, one in its own session, and a setsid
double fork whose parent exited: everything the seven clauses spawn, and more."""


def _members(namespace: str) -> list[int]:
    """Host pids of the live (non-zombie) processes in the PID namespace ``pid:[N]``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/ns/pid") != namespace:
                continue
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        if stat[stat.rfind(b")") + 2 :].split()[:1] not in ([b"Z"], [b"X"]):
            found.append(int(entry))
    return found


async def _eventually(predicate: Any, what: str, limit: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"{what} did not happen within {limit:g} s")
        await asyncio.sleep(0.02)


async def _family_started(workdir: Path) -> str:
    await _eventually(lambda: (workdir / "ready").exists(), "the family recording itself")
    namespace = (workdir / "ns").read_text().strip()
    assert namespace.startswith("pid:[")
    assert namespace != os.readlink("/proc/self/ns/pid")
    await _eventually(lambda: len(_members(namespace)) >= 8, "the whole family running")
    return namespace


@pytest.fixture
async def sandbox(tmp_path: Path) -> Any:
    executor: SandboxExecutor = _load_factories().make_sandbox(_args(tmp_path))
    async with executor:
        yield executor


async def test_pid_namespace_timeout_leaves_no_process_in_the_namespace(
    sandbox: SandboxExecutor, tmp_path: Path
) -> None:
    """timeout_kills_the_whole_process_group and _descendants_that_left_the_group, via the ns."""
    spec = sandbox.resolve(ShellExecRequest(_FAMILY, workdir=tmp_path, timeout=3))
    task = asyncio.ensure_future(sandbox.run(spec))
    namespace = await _family_started(tmp_path)
    result = await task
    assert result.timed_out
    assert not result.aborted
    await _eventually(lambda: not _members(namespace), "the namespace emptying")


async def test_pid_namespace_cancellation_leaves_no_process_in_the_namespace(
    sandbox: SandboxExecutor, tmp_path: Path
) -> None:
    """cancellation_kills_the_group_and_reports_aborted (and descendants), via the namespace."""
    spec = sandbox.resolve(ShellExecRequest(_FAMILY, workdir=tmp_path, timeout=600))
    task = asyncio.ensure_future(sandbox.run(spec))
    namespace = await _family_started(tmp_path)
    task.cancel()
    result = await task
    assert result.aborted
    assert not result.timed_out
    await _eventually(lambda: not _members(namespace), "the namespace emptying")


async def test_pid_namespace_background_kill_leaves_no_process_in_the_namespace(
    sandbox: SandboxExecutor, tmp_path: Path
) -> None:
    """background_kill_terminates_the_group, via the namespace."""
    process = sandbox.start(sandbox.resolve(ShellExecRequest(_FAMILY, workdir=tmp_path)))
    namespace = await _family_started(tmp_path)
    assert process.kill()
    assert await process.wait() == "killed"
    await _eventually(lambda: not _members(namespace), "the namespace emptying")


async def test_pid_namespace_exited_shell_takes_its_leftovers_and_does_not_wait(
    sandbox: SandboxExecutor, tmp_path: Path
) -> None:
    """exited_shell_does_not_wait_for_a_grandchild_holding_the_pipe, via the namespace.

    The shell exits while a grandchild holds stdout: run() returns promptly with the output,
    and (unlike the local executor, which leaves such a grandchild running) the sandbox's
    namespace dies with its shell, so the grandchild is gone too.
    """
    command = "readlink /proc/self/ns/pid > ns; sleep 600 & echo started"
    spec = sandbox.resolve(ShellExecRequest(command, workdir=tmp_path, timeout=600))
    result = await asyncio.wait_for(sandbox.run(spec), 60)
    assert (result.exit_code, result.timed_out, result.stdout.text) == (0, False, "started\n")
    namespace = (tmp_path / "ns").read_text().strip()
    await _eventually(lambda: not _members(namespace), "the namespace emptying")


async def test_pid_namespace_escaped_grandchild_does_not_hang_a_timed_out_run(
    sandbox: SandboxExecutor, tmp_path: Path
) -> None:
    """escaped_grandchild_does_not_hang_a_timed_out_run, via the namespace."""
    command = "readlink /proc/self/ns/pid > ns; setsid sleep 600 & sleep 600"
    spec = sandbox.resolve(ShellExecRequest(command, workdir=tmp_path, timeout=1))
    result = await asyncio.wait_for(sandbox.run(spec), 60)
    assert result.timed_out
    namespace = (tmp_path / "ns").read_text().strip()
    await _eventually(lambda: not _members(namespace), "the namespace emptying")
    with contextlib.suppress(FileNotFoundError):
        (tmp_path / "ns").unlink()
