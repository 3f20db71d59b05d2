"""Clauses run from a child Python process: what a command inherits from the executor's process.

pytest gives tests ``/dev/null`` as stdin, so an executor that lets a command inherit its own
stdin looks correct there. These clauses rebuild the executor (``child_factory``) in a child
whose stdin is a pipe this process holds open with a line in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from dsh_shell.testing._child import MARK
from dsh_shell.testing._context import ClauseContext, ContractViolation, expect
from dsh_shell.testing._fixture import CHILD_PROCESS, LOCAL_PROCESSES
from dsh_shell.testing._registry import ClauseGroup

group = ClauseGroup()
clause = group.clause

_PARENT_STDIN = b"line-from-the-parent-stdin\n"


async def run_in_child(
    ctx: ClauseContext,
    command: str,
    command_timeout: float,
    *,
    cwd: str | None = None,
    confine: bool = False,
    workdir: Path | None = None,
) -> dict[str, Any]:
    """Run ``command`` (no stdin) through the fixture's executor rebuilt in a child process
    whose stdin is an open pipe holding ``_PARENT_STDIN``; return the child's report. ``cwd``
    is the child process's directory; ``confine`` runs it under a workspace-write policy;
    ``workdir`` is the command's (and the policy's workspace; default: the scratch folder)."""
    request = {
        "factory": ctx.fixture.child_factory,
        "args": ctx.fixture.child_args,
        "command": command,
        "workdir": str(ctx.scratch if workdir is None else workdir),
        "timeout": command_timeout,
        "confine": confine,
    }
    env = dict(os.environ)
    # The child sees the modules this process sees (a factory may live beside the tests).
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    with tempfile.TemporaryFile() as stderr:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "dsh_shell.testing._child",
            json.dumps(request),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=cwd,
        )
        assert child.stdin is not None
        assert child.stdout is not None
        try:
            child.stdin.write(_PARENT_STDIN)  # and the pipe stays open: no EOF from here
            await child.stdin.drain()
            async with asyncio.timeout(ctx.safety_net + command_timeout):
                output = await child.stdout.read()
                await child.wait()
        except TimeoutError:
            raise ContractViolation(
                f"the child running the executor did not finish within "
                f"{ctx.safety_net + command_timeout:g} s"
            ) from None
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
            with contextlib.suppress(OSError):
                child.stdin.close()
        for line in output.decode("utf-8", "replace").splitlines():
            if line.startswith(MARK):
                report: dict[str, Any] = json.loads(line[len(MARK) :])
                return report
        stderr.seek(0)
        text = stderr.read().decode("utf-8", "replace")[-4000:]
    raise ContractViolation(
        f"the child running the executor exited ({child.returncode}) without reporting; "
        f"its stderr:\n{text}"
    )


@clause(LOCAL_PROCESSES, CHILD_PROCESS)
async def stdin_is_not_inherited_from_the_executor_process(ctx: ClauseContext) -> None:
    """Without stdin a command reads /dev/null, even when the executor's own stdin is an open
    pipe with data in it: `cat` sees end-of-file at once, not the parent's line."""
    report = await run_in_child(ctx, "cat; echo done", command_timeout=ctx.safety_net / 2)
    stdout = report["stdout"]
    expect(
        _PARENT_STDIN.decode() not in stdout,
        f"the command read the executor process's stdin: stdout {stdout[:200]!r}",
    )
    got = (report["exit_code"], report["timed_out"], stdout)
    expect(got == (0, False, "done\n"), f"`cat; echo done` without stdin gave {got}")
