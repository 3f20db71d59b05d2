"""Clauses: background processes started with ``start()``."""

from __future__ import annotations

from dsh_shell._executor import ShellProcess
from dsh_shell._request import ShellExecRequest
from dsh_shell.testing._context import ClauseContext, expect, read_pids
from dsh_shell.testing._fixture import BACKGROUND, HOST_PIDS, LOCAL_PROCESSES
from dsh_shell.testing._registry import ClauseGroup

group = ClauseGroup()
clause = group.clause


def _start(ctx: ClauseContext, command: str, **fields: object) -> ShellProcess:
    fields.setdefault("workdir", ctx.scratch)
    request = ShellExecRequest(command, **fields)  # type: ignore[arg-type]
    return ctx.executor.start(ctx.executor.resolve(request))


@clause(BACKGROUND)
async def start_returns_before_the_command_finishes(ctx: ClauseContext) -> None:
    """start() returns a running process at once; killing `sleep 30` settles it as killed."""
    process = _start(ctx, "sleep 30")
    expect(process.status == "running", f"status right after start() is {process.status!r}")
    expect(process.kill(), "kill() of a running process returned False")
    status = await process.wait()
    expect(status == "killed", f"a killed `sleep 30` settled as {status!r}")


@clause(BACKGROUND)
async def background_exit_code_is_reported(ctx: ClauseContext) -> None:
    """A background command that exits on its own is completed with its exit code."""
    process = _start(ctx, "exit 4")
    status = await process.wait()
    got = (status, process.exit_code, process.signal)
    expect(got == ("completed", 4, None), f"settled as {got}")


@clause(BACKGROUND)
async def background_self_signal_settles_killed(ctx: ClauseContext) -> None:
    """A background command that signals itself settles killed with that signal."""
    process = _start(ctx, "kill -TERM $$")
    status = await process.wait()
    got = (status, process.exit_code, process.signal)
    expect(got == ("killed", None, "SIGTERM"), f"settled as {got}")


@clause(BACKGROUND, LOCAL_PROCESSES)
async def read_output_is_consuming_and_incremental(ctx: ClauseContext) -> None:
    """Reads return only new output, never repeat it, and keep working after exit."""
    process = _start(ctx, "echo one; while [ ! -e go ]; do sleep 0.02; done; echo two")
    seen = ""

    def has_first_line() -> bool:
        nonlocal seen
        seen += process.read_output().delta
        return seen == "one\n" or len(seen) > 4

    try:
        await ctx.eventually(has_first_line, "the first line of a background command")
        expect(seen == "one\n", f"first reads gave {seen!r}")
        again = process.read_output().delta
        expect(again == "", f"a read with no new output gave {again!r}")
        (ctx.scratch / "go").touch()
        await process.wait()
        rest = process.read_output().delta
        expect(rest == "two\n", f"the read after exit gave {rest!r}")
        final = process.read_output().delta
        expect(final == "", f"a second read after exit repeated {final!r}")
    finally:
        process.kill()


@clause(BACKGROUND)
async def background_stderr_follows_a_header(ctx: ClauseContext) -> None:
    """A read merges stdout, then stderr under a `[stderr]` header."""
    process = _start(ctx, "echo out; echo err >&2")
    await process.wait()
    delta = process.read_output().delta
    expect(delta == "out\n[stderr]\nerr\n", f"delta {delta!r}")


@clause(BACKGROUND)
async def kill_is_idempotent(ctx: ClauseContext) -> None:
    """kill() is True once, then False; False after natural completion."""
    process = _start(ctx, "sleep 30")
    got = [process.kill(), process.kill()]
    await process.wait()
    got.append(process.kill())
    expect(got == [True, False, False], f"kill() results {got}")
    finished = _start(ctx, "true")
    await finished.wait()
    expect(not finished.kill(), "kill() of a completed process returned True")


@clause(BACKGROUND)
async def background_spawn_failure_settles_killed(ctx: ClauseContext) -> None:
    """A background command that cannot start settles killed; the error is in the output."""
    process = _start(ctx, "true", workdir=ctx.scratch / "does-not-exist")
    status = await process.wait()
    delta = process.read_output().delta
    expect(status == "killed", f"a failed spawn settled as {status!r}")
    expect("spawn failed" in delta, f"the output does not report the spawn failure: {delta!r}")


@clause(BACKGROUND, LOCAL_PROCESSES, HOST_PIDS)
async def background_kill_terminates_the_group(ctx: ClauseContext) -> None:
    """kill() terminates every process of the group, even one that ignores SIGTERM."""
    command = "(trap '' TERM; exec sleep 600) & echo $! > stubborn; echo $$ > shell; wait"
    process = _start(ctx, command)
    try:
        await ctx.eventually(
            lambda: len(read_pids(ctx.scratch, "shell", "stubborn")) == 2,
            "the background command recording its processes",
        )
    finally:
        pids = read_pids(ctx.scratch, "shell", "stubborn")
        ctx.track(pids)
    process.kill()
    await process.wait()
    await ctx.all_dead(pids, "the death of every process of the killed background group")
