"""Clauses: workdir, stdin, exit status, timeout, cancellation and leftover children."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
from pathlib import Path

from dsh_shell._errors import ShellCancelledError, ShellValueError, ShellWorkdirError
from dsh_shell._request import ShellExecRequest
from dsh_shell._results import ShellRunResult
from dsh_shell.testing._context import (
    ClauseContext,
    ContractViolation,
    expect,
    read_pids,
    real_path,
)
from dsh_shell.testing._fixture import HOST_PIDS, LOCAL_PROCESSES
from dsh_shell.testing._registry import ClauseGroup

group = ClauseGroup()
clause = group.clause

# A shell, a child and a grandchild that ignores SIGTERM, each writing its pid.
_FAMILY = (
    "(trap '' TERM; exec sleep 600) & echo $! > stubborn; "
    "sleep 600 & echo $! > child; echo $$ > shell; wait"
)
_FAMILY_FILES = ("shell", "child", "stubborn")

# Descendants that leave the command's process group: their own group (job control), their own
# session, a grandchild inside that session, and an orphan (its parent exited) in its own group.
_ESCAPEES = (
    "set -m; sleep 600 & echo $! > own_group; set +m; "
    "setsid sleep 600 & echo $! > own_session; "
    "setsid sh -c 'sleep 600 & echo $! > session_grandchild; wait' & "
    "(set -m; sleep 600 & echo $! > orphan) ; "
    "echo $$ > shell; wait"
)
_ESCAPEE_FILES = ("own_group", "own_session", "session_grandchild", "orphan", "shell")


@clause()
async def resolve_fills_defaults(ctx: ClauseContext) -> None:
    """resolve() fills workdir, timeout and stdout cap, and adds no stdin/env/dsh_env."""
    spec = ctx.executor.resolve(ShellExecRequest("true"))
    expect(spec.workdir.is_absolute(), f"workdir {spec.workdir} is not absolute")
    expect(math.isfinite(spec.timeout) and spec.timeout > 0, f"timeout {spec.timeout}")
    expect(spec.stdout_max_bytes > 0, f"stdout_max_bytes {spec.stdout_max_bytes}")
    expect((spec.stdin, spec.env, spec.dsh_env) == (None, None, None), "absent fields appeared")


@clause()
async def resolve_refuses_invalid_limits(ctx: ClauseContext) -> None:
    """A non-positive or non-finite timeout or stdout cap raises ShellValueError."""
    bad: list[dict[str, object]] = [
        {"timeout": 0},
        {"timeout": -1},
        {"timeout": math.nan},
        {"stdout_max_bytes": 0},
    ]
    for fields in bad:
        try:
            ctx.executor.resolve(ShellExecRequest("true", **fields))  # type: ignore[arg-type]
        except ShellValueError:
            continue
        raise AssertionError(f"resolve() accepted {fields}")


@clause()
async def cwd_defaults_to_the_resolved_workdir(ctx: ClauseContext) -> None:
    """Without a workdir the command runs in the workdir resolve() filled in.

    This process's cwd is one scratch directory during resolve() and another during run(), so
    an executor that ignores spec.workdir (and runs where this process happens to be) fails.
    """
    at_resolve = ctx.scratch / "cwd-at-resolve"
    at_run = ctx.scratch / "cwd-at-run"
    at_resolve.mkdir()
    at_run.mkdir()
    original = os.getcwd()
    try:
        os.chdir(at_resolve)
        spec = ctx.executor.resolve(ShellExecRequest("pwd -P"))
        os.chdir(at_run)
        result = await ctx.executor.run(spec)
    finally:
        os.chdir(original)
    expected = real_path(spec.workdir)
    expect(result.stdout.text == f"{expected}\n", f"pwd {result.stdout.text!r} != {expected!r}")


@clause()
async def cwd_override_is_used(ctx: ClauseContext) -> None:
    """A request workdir is the command's working directory."""
    result = await ctx.run("pwd -P", workdir=ctx.scratch)
    expected = real_path(ctx.scratch)
    expect(result.stdout.text == f"{expected}\n", f"pwd {result.stdout.text!r} != {expected!r}")


@clause()
async def bad_workdir_raises(ctx: ClauseContext) -> None:
    """A workdir that does not exist raises ShellWorkdirError from resolve() or run()."""
    await _expect_workdir_error(ctx, ctx.scratch / "does-not-exist")


@clause(LOCAL_PROCESSES)
async def unenterable_workdir_raises_naming_it(ctx: ClauseContext) -> None:
    """A workdir the executor cannot enter raises ShellWorkdirError naming it, nothing else.

    A regular file, a path through a regular file, and (unless this process may enter any
    directory, as root does) a directory of mode 000 and a path below one.
    """
    regular = ctx.scratch / "regular-file"
    regular.write_text("")
    cases = [regular, regular / "below"]
    locked = ctx.scratch / "locked"
    (locked / "below").mkdir(parents=True)
    locked.chmod(0)
    try:
        if not _can_search(locked):
            cases += [locked, locked / "below"]
        for workdir in cases:
            await _expect_workdir_error(ctx, workdir)
    finally:
        locked.chmod(0o700)


def _can_search(directory: Path) -> bool:
    try:
        os.stat(directory / "below")
    except PermissionError:
        return False
    return True


async def _expect_workdir_error(ctx: ClauseContext, workdir: Path) -> None:
    try:
        await ctx.run("true", workdir=workdir)
    except ShellWorkdirError as error:
        expect(str(workdir) in str(error), f"the error does not name the workdir: {error}")
        return
    except Exception as error:
        raise ContractViolation(
            f"workdir {str(workdir)!r} raised {type(error).__name__} ({error}), "
            "not ShellWorkdirError"
        ) from None
    raise ContractViolation(f"workdir {str(workdir)!r} did not raise ShellWorkdirError")


@clause()
async def stdin_is_given_to_the_command(ctx: ClauseContext) -> None:
    """stdin text is written to the command, then closed."""
    result = await ctx.run("cat", stdin="piped line\n")
    got = (result.exit_code, result.timed_out, result.stdout.text)
    expect(got == (0, False, "piped line\n"), f"`cat` with stdin gave {got}")


@clause()
async def stdin_defaults_to_dev_null(ctx: ClauseContext) -> None:
    """Without stdin the command reads end-of-file at once instead of waiting."""
    result = await ctx.run("cat; echo done")
    expect(not result.timed_out and result.stdout.text == "done\n", f"result {result}")


@clause()
async def exit_code_is_reported(ctx: ClauseContext) -> None:
    """The shell's exit code is reported, with no signal and neither flag."""
    for code in (0, 3):
        result = await ctx.run(f"exit {code}")
        got = (result.exit_code, result.signal, result.timed_out, result.aborted)
        expect(got == (code, None, False, False), f"`exit {code}` gave {got}")


@clause()
async def stdout_and_stderr_stay_separate(ctx: ClauseContext) -> None:
    """The two streams are collected separately."""
    result = await ctx.run("echo out; echo err >&2")
    got = (result.stdout.text, result.stderr.text)
    expect(got == ("out\n", "err\n"), f"streams {got}")


@clause()
async def self_kill_is_neither_timed_out_nor_aborted(ctx: ClauseContext) -> None:
    """A command that signals itself reports the signal and neither timed_out nor aborted."""
    result = await ctx.run("kill -TERM $$")
    got = (result.exit_code, result.signal, result.timed_out, result.aborted)
    expect(got == (None, "SIGTERM", False, False), f"self-kill gave {got}")


@clause()
async def timeout_reports_timed_out_not_aborted(ctx: ClauseContext) -> None:
    """A command outliving its timeout is killed and reported as timed out, not aborted."""
    task = asyncio.ensure_future(ctx.run("sleep 600", timeout=1))
    try:
        await ctx.eventually(task.done, "run() returning after its 1 s timeout")
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
    result = task.result()
    expect(result.timed_out and not result.aborted, f"flags {result.timed_out, result.aborted}")
    expect(result.timeout == 1, f"effective timeout {result.timeout} != 1")
    expect(result.exit_code != 0, "a killed command reported exit code 0")


@clause(LOCAL_PROCESSES, HOST_PIDS)
async def timeout_kills_the_whole_process_group(ctx: ClauseContext) -> None:
    """On timeout every process of the group dies, even a grandchild that ignores SIGTERM."""
    result = await ctx.run(_FAMILY, timeout=2)
    pids = read_pids(ctx.scratch, *_FAMILY_FILES)
    ctx.track(pids)
    expect(len(pids) == 3, f"the command did not record its processes before the timeout: {pids}")
    expect(result.timed_out, "the run did not report timed_out")
    await ctx.all_dead(pids, "the death of every process of the timed-out group")


@clause(LOCAL_PROCESSES, HOST_PIDS)
async def cancellation_kills_the_group_and_reports_aborted(ctx: ClauseContext) -> None:
    """Cancelling the awaiting task kills the whole group and returns an aborted result."""
    task = asyncio.ensure_future(ctx.run(_FAMILY, timeout=600))
    try:
        await ctx.eventually(
            lambda: len(read_pids(ctx.scratch, *_FAMILY_FILES)) == 3 or task.done(),
            "the command recording its processes",
        )
        pids = read_pids(ctx.scratch, *_FAMILY_FILES)
        ctx.track(pids)
        task.cancel()
        try:
            result = await task
        except asyncio.CancelledError:
            raise AssertionError(
                "run() let the cancellation escape instead of reporting aborted"
            ) from None
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
    expect(result.aborted and not result.timed_out, f"flags {result.timed_out, result.aborted}")
    await ctx.all_dead(pids, "the death of every process of the cancelled group")


@clause(LOCAL_PROCESSES, HOST_PIDS)
async def timeout_kills_descendants_that_left_the_group(ctx: ClauseContext) -> None:
    """On timeout descendants in their own group or session die too (set -m, setsid, orphans).

    Only a PID namespace finds a process that left the session and whose parent died before the
    timeout (a double fork with setsid); this clause does not ask for that.
    """
    try:
        result = await ctx.run(_ESCAPEES, timeout=5)
    finally:
        pids = read_pids(ctx.scratch, *_ESCAPEE_FILES)
        ctx.track(pids)
    expect(len(pids) == 5, f"the command did not record its processes before the timeout: {pids}")
    expect(result.timed_out, "the run did not report timed_out")
    await ctx.all_dead(pids, "the death of every descendant of the timed-out command")


@clause(LOCAL_PROCESSES, HOST_PIDS)
async def cancellation_kills_descendants_that_left_the_group(ctx: ClauseContext) -> None:
    """Cancelling the awaiting task kills descendants in their own group or session too."""
    task = asyncio.ensure_future(ctx.run(_ESCAPEES, timeout=600))
    try:
        await ctx.eventually(
            lambda: len(read_pids(ctx.scratch, *_ESCAPEE_FILES)) == 5 or task.done(),
            "the command recording its processes",
        )
        pids = read_pids(ctx.scratch, *_ESCAPEE_FILES)
        ctx.track(pids)
        task.cancel()
        result = await _aborted_result(task)
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
    expect(result.aborted, f"flags {result.timed_out, result.aborted}")
    await ctx.all_dead(pids, "the death of every descendant of the cancelled command")


async def _aborted_result(task: asyncio.Future[ShellRunResult]) -> ShellRunResult:
    try:
        return await task
    except asyncio.CancelledError:
        raise ContractViolation(
            "run() let the cancellation escape instead of reporting aborted"
        ) from None


@clause(LOCAL_PROCESSES)
async def cancelled_task_starts_nothing(ctx: ClauseContext) -> None:
    """run() in a task that is already cancelled raises and starts no command."""
    marker = ctx.scratch / "started"
    spec = ctx.executor.resolve(ShellExecRequest(f"touch {marker}", workdir=ctx.scratch))

    outcome: list[str] = []

    async def cancelled_caller() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        try:
            await ctx.executor.run(spec)
        except (ShellCancelledError, asyncio.CancelledError) as error:
            outcome.append(type(error).__name__)
            return
        except Exception as error:  # anything else is a failure of this clause
            outcome.append(f"{type(error).__name__}: {error}")
            return
        outcome.append("returned a result")

    await asyncio.wait([asyncio.ensure_future(cancelled_caller())])
    expect(
        outcome in (["ShellCancelledError"], ["CancelledError"]),
        f"run() in a cancelled task raised neither ShellCancelledError nor CancelledError: "
        f"{outcome}",
    )
    await asyncio.sleep(0.2)  # let a wrongly spawned command touch its marker
    expect(not marker.exists(), "run() in a cancelled task started the command")


@clause(LOCAL_PROCESSES, HOST_PIDS)
async def exited_shell_does_not_wait_for_a_grandchild_holding_the_pipe(
    ctx: ClauseContext,
) -> None:
    """When the shell exits, a backgrounded grandchild holding stdout does not hold run()."""
    task = asyncio.ensure_future(
        ctx.run("sleep 600 & echo $! > leftover; echo started", timeout=600)
    )
    try:
        await ctx.eventually(task.done, "run() returning while a grandchild holds the pipe")
    finally:
        ctx.track(read_pids(ctx.scratch, "leftover"))
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
    result = task.result()
    got = (result.exit_code, result.timed_out, result.stdout.text)
    expect(got == (0, False, "started\n"), f"result {got}")


@clause(LOCAL_PROCESSES, HOST_PIDS)
async def escaped_grandchild_does_not_hang_a_timed_out_run(ctx: ClauseContext) -> None:
    """A grandchild in its own session holding stdout does not hold a timed-out run()."""
    command = "setsid sleep 600 & echo $! > escaped; sleep 600"
    task = asyncio.ensure_future(ctx.run(command, timeout=1))
    try:
        await ctx.eventually(task.done, "run() returning after its timeout")
    finally:
        ctx.track(read_pids(ctx.scratch, "escaped"))
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
    expect(task.result().timed_out, "the run did not report timed_out")
