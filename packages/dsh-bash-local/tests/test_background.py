"""LocalBashExecutor.start beyond the contract: lossy reads, stdin, aclose, host exit."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_bash_local import LocalBashExecutor
from dsh_shell import ShellExecRequest, process_outcome, render_process_read

pytestmark = pytest.mark.usefixtures("spawn_path")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


async def test_a_lossy_read_reports_the_spill_path(executor: LocalBashExecutor) -> None:
    process = executor.start(executor.resolve(ShellExecRequest("seq 1 1000")))
    await process.wait()
    read = process.read_output()
    assert read.lossy
    assert read.stdout_spill_path is not None
    assert read.delta.endswith("999\n1000\n")
    assert str(read.stdout_spill_path) in render_process_read(read)


async def test_background_stdin_is_given(executor: LocalBashExecutor) -> None:
    process = executor.start(executor.resolve(ShellExecRequest("cat", stdin="fed\n")))
    await process.wait()
    assert process.read_output().delta == "fed\n"


async def test_background_env_and_dsh_env_reach_the_command(executor: LocalBashExecutor) -> None:
    request = ShellExecRequest(
        'echo "[$A][$DSH_SHELL]"', env={"A": "env-ok"}, dsh_env={"DSH_SHELL": "1"}
    )
    process = executor.start(executor.resolve(request))
    await process.wait()
    assert process.read_output().delta == "[env-ok][1]\n"


async def test_outcome_of_a_killed_process_names_the_signal(executor: LocalBashExecutor) -> None:
    process = executor.start(executor.resolve(ShellExecRequest("sleep 30")))
    process.kill()
    await process.wait()
    assert process_outcome(process).status == "killed"
    assert process_outcome(process).detail.startswith(("signal: SIGTERM", "killed before exit"))


async def test_aclose_kills_running_background_processes(tmp_path: Path) -> None:
    async with LocalBashExecutor() as executor:
        request = ShellExecRequest("echo > ready; exec sleep 600", workdir=tmp_path)
        process = executor.start(executor.resolve(request))
        for _ in range(3000):  # a safety net of about a minute, not a speed requirement
            if (tmp_path / "ready").exists():
                break
            await asyncio.sleep(0.02)
        assert process.pgid is not None
    assert process.status == "killed"
    assert not _alive(process.pgid)


async def test_a_kill_before_the_spawn_never_runs_the_command(
    executor: LocalBashExecutor, tmp_path: Path
) -> None:
    process = executor.start(executor.resolve(ShellExecRequest("touch ran", workdir=tmp_path)))
    assert process.kill()
    assert await process.wait() == "killed"
    assert (process.pgid, (tmp_path / "ran").exists()) == (None, False)


async def test_a_spawn_raising_an_unexpected_error_still_settles_as_killed(
    executor: LocalBashExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_popen(*args: object, **kwargs: object) -> None:
        raise subprocess.SubprocessError("no child today")

    monkeypatch.setattr(subprocess, "Popen", failing_popen)
    process = executor.start(executor.resolve(ShellExecRequest("true")))
    assert await asyncio.wait_for(process.wait(), 60) == "killed"
    delta = process.read_output().delta
    assert ("spawn failed:" in delta, "no child today" in delta) == (True, True)


def test_background_groups_die_when_the_host_interpreter_exits(tmp_path: Path) -> None:
    # The loop is left running-capable and unclosed, with the process task pending: only the
    # executor's interpreter-exit hook can kill the group.
    script = """
import asyncio, sys
from pathlib import Path
from dsh_bash_local import LocalBashExecutor
from dsh_shell import ShellExecRequest

executor = LocalBashExecutor()

async def start() -> None:
    request = ShellExecRequest("echo $$ > pid; exec sleep 600", workdir=sys.argv[1])
    process = executor.start(executor.resolve(request))
    while process.pgid is None or not Path(sys.argv[1], "pid").exists():
        await asyncio.sleep(0.01)

loop = asyncio.new_event_loop()
loop.run_until_complete(start())
sys.exit(0)
"""
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], check=True, timeout=60, capture_output=True
    )
    pid = int((tmp_path / "pid").read_text())
    try:
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, 9)


_ESCAPEES = (
    "set -m; sleep 600 & echo $! > own_group; set +m; "
    "setsid sleep 600 & echo $! > own_session; "
    "(set -m; sleep 600 & echo $! > orphan); echo > ready; wait"
)


async def _recorded(directory: Path, *names: str) -> dict[str, int]:
    for _ in range(3000):  # a safety net of about a minute, not a speed requirement
        if (directory / "ready").exists():
            return {name: int((directory / name).read_text()) for name in names}
        await asyncio.sleep(0.02)
    raise AssertionError("the command never recorded its processes")


async def _all_gone(pids: dict[str, int]) -> dict[str, int]:
    for _ in range(3000):
        alive = {name: pid for name, pid in pids.items() if _alive(pid)}
        if not alive:
            return alive
        await asyncio.sleep(0.02)
    return alive


async def test_killing_a_background_process_kills_descendants_that_left_its_group(
    executor: LocalBashExecutor, tmp_path: Path
) -> None:
    process = executor.start(executor.resolve(ShellExecRequest(_ESCAPEES, workdir=tmp_path)))
    pids = await _recorded(tmp_path, "own_group", "own_session", "orphan")
    try:
        process.kill()
        assert await process.wait() == "killed"
        assert await _all_gone(pids) == {}
    finally:
        for pid in pids.values():
            if _alive(pid):
                os.kill(pid, 9)


async def test_aclose_kills_descendants_that_left_the_group(tmp_path: Path) -> None:
    executor = LocalBashExecutor()
    executor.start(executor.resolve(ShellExecRequest(_ESCAPEES, workdir=tmp_path)))
    pids = await _recorded(tmp_path, "own_group", "own_session", "orphan")
    try:
        await executor.aclose()
        assert await _all_gone(pids) == {}
    finally:
        for pid in pids.values():
            if _alive(pid):
                os.kill(pid, 9)
