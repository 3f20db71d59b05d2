"""LocalBashExecutor.run beyond the contract: caps per stream, signals, errors, rendering."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from pathlib import Path

import pytest

from dsh_bash_local import LocalBashConfig, LocalBashExecutor
from dsh_shell import (
    ShellExecRequest,
    ShellNotFoundError,
    ShellSpawnError,
    ShellWorkdirError,
    render_result,
)

pytestmark = pytest.mark.usefixtures("spawn_path")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


async def test_stdout_max_bytes_raises_only_the_stdout_budget(executor: LocalBashExecutor) -> None:
    command = "printf 'x%.0s' $(seq 500); printf 'y%.0s' $(seq 500) >&2"
    result = await executor.run(executor.resolve(ShellExecRequest(command, stdout_max_bytes=1000)))
    assert (len(result.stdout.text), result.stdout.truncated) == (500, False)
    assert (len(result.stderr.text), result.stderr.truncated) == (100, True)


async def test_a_term_trapping_shell_dies_by_sigkill_after_the_grace(
    executor: LocalBashExecutor,
) -> None:
    request = ShellExecRequest("trap '' TERM; while :; do sleep 0.05; done", timeout=0.5)
    result = await executor.run(executor.resolve(request))
    assert (result.timed_out, result.signal, result.exit_code) == (True, "SIGKILL", None)


async def test_spill_files_live_in_a_private_directory_under_spill_dir(
    executor: LocalBashExecutor, tmp_path: Path
) -> None:
    result = await executor.run(executor.resolve(ShellExecRequest("seq 1 1000")))
    spill = result.stdout.spill_path
    assert spill is not None
    assert spill.parent.parent == tmp_path / "spill-parent"
    assert stat.S_IMODE(spill.parent.stat().st_mode) == 0o700
    assert spill.name.endswith("-stdout.log")


async def test_zero_spill_bytes_truncates_without_a_spill_file(tmp_path: Path) -> None:
    config = LocalBashConfig(max_output_bytes=10, max_spill_bytes=0, spill_dir=tmp_path)
    async with LocalBashExecutor(config) as executor:
        result = await executor.run(executor.resolve(ShellExecRequest("seq 1 1000")))
    assert (result.stdout.truncated, result.stdout.spill_path) == (True, None)
    assert os.listdir(tmp_path) == []


async def test_a_missing_shell_raises_shell_not_found(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-bash")
    async with LocalBashExecutor(LocalBashConfig(shell=missing)) as executor:
        with pytest.raises(ShellNotFoundError) as info:
            await executor.run(executor.resolve(ShellExecRequest("true", workdir=tmp_path)))
    assert info.value.shell == missing


async def test_a_file_as_workdir_raises_naming_it(
    executor: LocalBashExecutor, tmp_path: Path
) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    with pytest.raises(ShellWorkdirError, match="not a directory") as info:
        await executor.run(executor.resolve(ShellExecRequest("true", workdir=not_a_dir)))
    assert info.value.workdir == not_a_dir


async def test_bytes_stdin_is_written_as_is(executor: LocalBashExecutor) -> None:
    request = ShellExecRequest("od -An -tx1", stdin=b"\x00\xff")
    result = await executor.run(executor.resolve(request))
    assert result.stdout.text.split() == ["00", "ff"]


async def test_a_stdin_the_command_never_reads_does_not_break_the_run(
    executor: LocalBashExecutor,
) -> None:
    request = ShellExecRequest("exit 0", stdin="x" * 1_000_000)
    result = await executor.run(executor.resolve(request))
    assert result.exit_code == 0


async def test_a_run_renders_with_the_exit_marker(executor: LocalBashExecutor) -> None:
    result = await executor.run(executor.resolve(ShellExecRequest("echo failing; exit 3")))
    assert render_result(result) == "failing\n[exit code: 3]"


async def test_the_result_reports_the_effective_timeout(executor: LocalBashExecutor) -> None:
    result = await executor.run(executor.resolve(ShellExecRequest("true", timeout=7)))
    assert (result.timeout, result.duration >= 0) == (7, True)


async def test_the_shell_is_non_login_and_non_interactive(executor: LocalBashExecutor) -> None:
    request = ShellExecRequest('shopt -q login_shell && echo login; echo "flags=$-"')
    result = await executor.run(executor.resolve(request))
    assert "login" not in result.stdout.text
    assert "i" not in result.stdout.text.removeprefix("flags=")


async def test_a_cancellation_while_spawning_still_reports_aborted(
    executor: LocalBashExecutor, tmp_path: Path
) -> None:
    spec = executor.resolve(ShellExecRequest("echo $$ > pid; exec sleep 600", workdir=tmp_path))
    task = asyncio.ensure_future(executor.run(spec))
    await asyncio.sleep(0)  # run() is now inside the spawn
    task.cancel()
    result = await task
    assert (result.aborted, result.timed_out) == (True, False)
    assert result.exit_code is None


async def test_a_cancellation_while_spawning_leaves_no_process(
    executor: LocalBashExecutor, tmp_path: Path
) -> None:
    # The marker is in the shell's argv and, after exec -a, in the sleep's: whichever ran.
    marker = f"dsh-test-{os.getpid()}-{id(tmp_path):x}"
    spec = executor.resolve(ShellExecRequest(f"exec -a {marker} sleep 600", workdir=tmp_path))
    task = asyncio.ensure_future(executor.run(spec))
    await asyncio.sleep(0)
    task.cancel()
    await task
    assert _live_pids_with_argument(marker) == []


def _live_pids_with_argument(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(marker.encode() in argument for argument in argv) and _alive(int(entry.name)):
            pids.append(int(entry.name))
    return pids


async def test_a_spawn_raising_an_unexpected_error_is_a_spawn_error(
    executor: LocalBashExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_popen(*args: object, **kwargs: object) -> None:
        raise subprocess.SubprocessError("no child today")

    spec = executor.resolve(ShellExecRequest("true"))
    monkeypatch.setattr(subprocess, "Popen", failing_popen)
    with pytest.raises(ShellSpawnError, match="no child today"):
        await executor.run(spec)


async def test_a_failed_spawn_leaves_no_descriptor_open(
    executor: LocalBashExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_popen(*args: object, **kwargs: object) -> None:
        raise subprocess.SubprocessError("no child today")

    spec = executor.resolve(ShellExecRequest("cat", stdin="x"))
    before = sorted(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(subprocess, "Popen", failing_popen)
    with pytest.raises(ShellSpawnError):
        await executor.run(spec)
    assert sorted(os.listdir("/proc/self/fd")) == before


_TERM_TRAPPER = "trap 'echo term > got-term' TERM; echo > ready; while :; do sleep 0.05; done"


def _exists(path: Path) -> bool:
    return path.exists()


async def _when_file_exists(path: Path) -> None:
    for _ in range(3000):  # a safety net of about a minute, not a speed requirement
        if _exists(path):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


async def test_a_cancellation_during_the_timeout_grace_keeps_timed_out(tmp_path: Path) -> None:
    async with LocalBashExecutor(LocalBashConfig(grace=30)) as executor:
        spec = executor.resolve(ShellExecRequest(_TERM_TRAPPER, workdir=tmp_path, timeout=3))
        task = asyncio.ensure_future(executor.run(spec))
        await _when_file_exists(tmp_path / "got-term")
        task.cancel()
        result = await task
    assert (result.timed_out, result.aborted, result.signal) == (True, False, "SIGKILL")


async def test_a_second_cancellation_during_the_grace_keeps_aborted(tmp_path: Path) -> None:
    async with LocalBashExecutor(LocalBashConfig(grace=30)) as executor:
        spec = executor.resolve(ShellExecRequest(_TERM_TRAPPER, workdir=tmp_path, timeout=600))
        task = asyncio.ensure_future(executor.run(spec))
        await _when_file_exists(tmp_path / "ready")
        task.cancel()
        await _when_file_exists(tmp_path / "got-term")
        task.cancel()
        result = await task
    assert (result.timed_out, result.aborted, result.signal) == (False, True, "SIGKILL")
