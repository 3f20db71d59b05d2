"""BashTool: the model-facing ``bash`` tool over any `dsh_shell.ShellExecutor`."""

from __future__ import annotations

import math
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from dsh_shell import ShellExecRequest, ShellExecutor, render_result
from dsh_tool_bash._description import bash_description
from dsh_tool_bash._errors import BackgroundDisabledError
from dsh_tool_bash._jobs import JobRegistry
from dsh_tool_bash._schema import (
    OptionalNumber,
    OptionalString,
    model_facing_schema,
    without_default,
)
from dsh_tool_bash._shell_env import ShellEnvRegistry
from dsh_tools import (
    InvalidToolArgumentsError,
    ToolAbortedError,
    ToolDefinition,
    ToolExecution,
)

__all__ = ["BashArgs", "BashBackgroundArgs", "BashTool"]


class BashArgs(BaseModel):
    """The bash tool's parameters when background execution is disabled.

    Keys the model adds beyond these (``env``, ``stdin``, output caps, ``DSH_*`` values) are
    ignored: the request is built from these named fields only. Types are strict: a bool is
    not a number, a string is not a bool or a number. ``timeoutMs`` is a finite number of
    milliseconds >= 1.
    """

    model_config = ConfigDict(
        extra="ignore",
        title="bash",
        frozen=True,
        strict=True,
        json_schema_extra=model_facing_schema,
    )

    command: str = Field(description="The bash command to execute.")
    description: str = Field(
        description=(
            "A 5-10 word active-voice summary of what the command does, shown to the user "
            "(for example `ls` -> 'List files in current directory'). It does not change "
            "what runs."
        )
    )
    timeout_ms: OptionalNumber = Field(
        default=None,
        alias="timeoutMs",
        description=(
            "Timeout in milliseconds. The executor applies its default when absent, caps "
            "larger values, and kills the command when it expires."
        ),
        json_schema_extra=without_default,
    )
    workdir: OptionalString = Field(
        default=None,
        description=(
            "Working directory. Defaults to the session workspace; a relative path resolves "
            "against it."
        ),
        json_schema_extra=without_default,
    )


class BashBackgroundArgs(BashArgs):
    """The bash tool's parameters when background execution is enabled."""

    model_config = ConfigDict(title="bash")

    run_in_background: bool = Field(
        default=False,
        description=(
            "Start the command as a background job and return its job id at once (no "
            "timeout). Read its output with job_output and stop it with job_kill."
        ),
    )


class BashTool(ToolDefinition[BashArgs]):
    """The ``bash`` tool: runs one command through ``executor`` with a managed ``DSH_*`` overlay.

    Every call gets a fresh snapshot from ``shell_env`` (`ShellEnvRegistry.collect`) as the
    request's ``dsh_env``; the request carries only ``command``, ``workdir`` and ``timeout``
    besides it. ``workdir`` defaults to the calling agent's session cwd and a relative one
    resolves against it. The result is the rendered output (``[exit code: N]`` for a non-zero
    exit is a normal result); an infrastructure failure (a `dsh_shell.ShellError`, a
    ``shell_env`` error) or cancellation is an error result.

    With ``enable_background`` (the default) the ``run_in_background`` parameter exists and
    starts a job in ``jobs`` (a new `JobRegistry` unless one is given) owned by the calling
    session; offer the ``job_*`` tools of `job_tools` over the same registry. Without it the
    parameter is absent from the schema and a call that sends it anyway is refused.
    """

    name = "bash"

    def __init__(
        self,
        executor: ShellExecutor,
        shell_env: ShellEnvRegistry,
        *,
        enable_background: bool = True,
        jobs: JobRegistry | None = None,
    ) -> None:
        self.executor = executor
        self.shell_env = shell_env
        self.enable_background = enable_background
        self.jobs = jobs if jobs is not None else JobRegistry()
        self.description = bash_description(enable_background=enable_background)
        self.parameters = BashBackgroundArgs if enable_background else BashArgs

    async def execute(self, args: BashArgs, execution: ToolExecution) -> str:
        """Run the command (foreground) or start it as a job (background)."""
        background = _wants_background(args, execution)
        if background and not self.enable_background:
            raise BackgroundDisabledError()
        _check_non_blank("command", args.command)
        _check_non_blank("description", args.description)
        timeout = _timeout_seconds(args.timeout_ms)
        request = ShellExecRequest(
            command=args.command,
            workdir=_workdir(args.workdir, execution),
            timeout=timeout,
            dsh_env=await self.shell_env.collect(execution),
        )
        spec = self.executor.resolve(request)
        if background:
            process = self.executor.start(spec)
            job = self.jobs.start(process, label=args.command, owner=execution.session_id)
            return f"started background job {job.id}"
        result = await self.executor.run(spec)
        if result.aborted:
            raise ToolAbortedError(before_dispatch=False)
        return render_result(result)


def _wants_background(args: BashArgs, execution: ToolExecution) -> bool:
    if isinstance(args, BashBackgroundArgs):
        return args.run_in_background
    # The schema hides the key when background is disabled, but a model may still send it:
    # anything but an absent or false value is refused rather than guessed at.
    return execution.arguments.get("run_in_background", False) not in (False, None)


def _check_non_blank(field: str, value: str) -> None:
    if not value.strip():
        problem = f"invalid {field}: expected a non-empty string"
        raise InvalidToolArgumentsError("bash", [problem])


MIN_TIMEOUT_MS = 1
"""The smallest ``timeoutMs`` accepted: below one millisecond is refused, not rounded to 0."""


def _timeout_seconds(timeout_ms: float | None) -> float | None:
    if timeout_ms is None:
        return None
    if not math.isfinite(timeout_ms) or timeout_ms < MIN_TIMEOUT_MS:
        # Name the value as the model wrote it in JSON (-5, not Python's -5.0).
        shown = (
            str(int(timeout_ms))
            if math.isfinite(timeout_ms) and float(timeout_ms).is_integer()
            else repr(timeout_ms)
        )
        problem = f"invalid timeoutMs: expected a number of milliseconds >= 1, got {shown}"
        raise InvalidToolArgumentsError("bash", [problem])
    return timeout_ms / 1000


def _workdir(workdir: str | None, execution: ToolExecution) -> str | None:
    cwd = execution.caller.cwd if execution.caller is not None else None
    if workdir is None:
        return cwd
    if cwd is not None and not os.path.isabs(workdir):
        return str(Path(cwd) / workdir)
    return workdir
