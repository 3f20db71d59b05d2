"""Run one command hook through a ``ShellExecutor``: the payload on stdin, a timeout, a cwd.

The request carries no ``dsh_env`` unless the configuration gives one, so a hook child sees no
``DSH_*`` variable (the executor scrubs the inherited ones). Nothing here raises for the hook's
own failures: an executor that refuses the request or cannot start the command, a signal and a
timeout all become a `HookOutput` with no exit code and an ``error``. Only the cancellation of
the awaiting task propagates (the executor has killed the hook's process group by then).

What is read into memory is bounded: stdout asks the executor for `HOOK_OUTPUT_MAX_BYTES` (room
for a JSON answer), stderr has the executor's own cap. A stdout over its cap is a non-blocking
error (an answer cut at its start is not read); a stderr over its cap keeps its tail, headed by
a line saying so and naming the executor's file of the whole stream when there is one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass

from dsh_hooks._config import CommandHook, HookEventName
from dsh_hooks._output import HookOutput, parse_hook_output
from dsh_shell import ShellExecRequest, ShellExecutor

__all__ = ["HOOK_OUTPUT_MAX_BYTES", "HookRun", "run_command_hook"]

HOOK_OUTPUT_MAX_BYTES = 1024 * 1024
"""The bytes of a hook's stdout read into memory (1 MiB): its JSON answer must fit."""


@dataclass(frozen=True, slots=True)
class HookRun:
    """A finished hook: its decoded ``output`` and its wall time in ``duration_ms``."""

    output: HookOutput
    duration_ms: int


async def run_command_hook(
    executor: ShellExecutor,
    hook: CommandHook,
    event: HookEventName,
    stdin: str,
    *,
    workdir: str | None,
    default_timeout: float,
    env: Mapping[str, str] | None,
    dsh_env: Mapping[str, str] | None,
    plain_stdout_is_context: bool,
) -> HookRun:
    """Run ``hook`` for ``event`` with ``stdin`` and decode what it said (``default_timeout``
    applies when the hook sets no ``timeout``)."""
    started = time.monotonic()

    def finished(output: HookOutput) -> HookRun:
        return HookRun(output, round((time.monotonic() - started) * 1000))

    request = ShellExecRequest(
        command=hook.command,
        workdir=workdir,
        timeout=hook.timeout if hook.timeout is not None else default_timeout,
        stdout_max_bytes=HOOK_OUTPUT_MAX_BYTES,
        stdin=stdin,
        env=env or None,
        dsh_env=dsh_env or None,
    )
    try:
        result = await executor.run(executor.resolve(request))
    except asyncio.CancelledError:
        raise
    except Exception as refused:  # a refused request or a command that could not start
        message = f"the hook could not run: {refused}"
        return finished(HookOutput(None, error=message, stderr=message))
    if result.aborted:
        raise asyncio.CancelledError
    error: str | None = None
    exit_code = result.exit_code
    if result.timed_out:
        exit_code, error = None, f"the hook timed out after {result.timeout:g} s"
    elif exit_code is None:
        error = f"the hook was killed by {result.signal or 'a signal'}"
    elif exit_code not in (0, 2):
        error = f"the hook failed with exit code {exit_code}"
    stderr = result.stderr.text
    if result.stderr.truncated:
        whole = (
            f"; the whole stream is in {result.stderr.spill_path}"
            if result.stderr.spill_path
            else ""
        )
        stderr = f"[the hook's stderr was over the cap: its start was dropped{whole}]\n{stderr}"
    if result.stdout.truncated and error is None:
        error = f"the hook's stdout is over {HOOK_OUTPUT_MAX_BYTES} bytes: its answer is not read"
    output = parse_hook_output(
        event,
        exit_code,
        result.stdout.text,
        stderr,
        error=error,
        plain_stdout_is_context=plain_stdout_is_context,
    )
    return finished(output)
