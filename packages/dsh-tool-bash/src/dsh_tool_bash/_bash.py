"""BashTool: the model-facing ``bash`` tool over any `dsh_shell.ShellExecutor`."""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from dsh_session import logged_permissions
from dsh_shell import (
    ESCALATION_SCHEMA,
    JUSTIFICATION_DESCRIPTION,
    SANDBOX_PERMISSIONS_DESCRIPTION,
    Escalation,
    OutputListener,
    SandboxPolicy,
    ShellExecRequest,
    ShellExecutor,
    ShellRunResult,
    escalation_pair_problem,
    escalation_reason,
    not_widening_problem,
    render_result,
    retry_wider_hint,
    sandbox_denied_marker,
    sandbox_mode_from_log,
)
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

__all__ = [
    "BashArgs",
    "BashBackgroundArgs",
    "BashBackgroundSandboxArgs",
    "BashSandboxArgs",
    "BashTool",
]

OptionalEscalation = Annotated[Escalation | None, WithJsonSchema(ESCALATION_SCHEMA)]
"""An escalation the model may omit, shown as a string enum only."""


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

    command: str = Field(description="The command.")
    description: str = Field(
        description="5-10 words on what it does, shown to the user (e.g. 'List files')."
    )
    timeout_ms: OptionalNumber = Field(
        default=None,
        alias="timeoutMs",
        description="Timeout in ms (capped).",
        json_schema_extra=without_default,
    )
    workdir: OptionalString = Field(
        default=None,
        description="Working directory (default: the workspace; relative to it).",
        json_schema_extra=without_default,
    )


class BashBackgroundArgs(BashArgs):
    """The bash tool's parameters when background execution is enabled."""

    model_config = ConfigDict(title="bash")

    run_in_background: bool = Field(
        default=False,
        description="Run as a background job: returns its job id at once, no timeout.",
    )


class _Escalation(BaseModel):
    """The two escalation fields a confining executor adds, given together."""

    sandbox_permissions: OptionalEscalation = Field(
        default=None,
        description=SANDBOX_PERMISSIONS_DESCRIPTION,
        json_schema_extra=without_default,
    )
    justification: OptionalString = Field(
        default=None,
        description=JUSTIFICATION_DESCRIPTION,
        json_schema_extra=without_default,
    )

    @model_validator(mode="after")
    def _together(self) -> _Escalation:
        problem = escalation_pair_problem(self.sandbox_permissions, self.justification)
        if problem is not None:
            raise ValueError(problem)
        return self


class BashSandboxArgs(_Escalation, BashArgs):
    """The bash tool's parameters under a sandbox, without background execution."""

    model_config = ConfigDict(title="bash")


class BashBackgroundSandboxArgs(_Escalation, BashBackgroundArgs):
    """The bash tool's parameters under a sandbox, with background execution."""

    model_config = ConfigDict(title="bash")


def _parameters(*, background: bool, sandbox: bool) -> type[BashArgs]:
    if sandbox:
        return BashBackgroundSandboxArgs if background else BashSandboxArgs
    return BashBackgroundArgs if background else BashArgs


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

    With ``sandbox`` (the default `SandboxPolicy`; its ``workspace`` defaults to the caller's
    cwd, its mode to the calling session's last logged ``sandbox/mode``) every request carries
    the policy, so a confining executor confines it and a non-confining one refuses it; the
    parameters gain ``sandbox_permissions`` + ``justification`` (given together, widening
    only): such a call needs approval (``escalate sandbox to <mode>: <justification>``) and,
    once granted, runs that one call under the wider mode. A result the executor marks as
    refused by the sandbox ends with the ``[sandbox: file access denied under <mode> mode]``
    marker and a hint to retry once with escalation.
    """

    name = "bash"

    def __init__(
        self,
        executor: ShellExecutor,
        shell_env: ShellEnvRegistry,
        *,
        enable_background: bool = True,
        jobs: JobRegistry | None = None,
        sandbox: SandboxPolicy | None = None,
    ) -> None:
        self.executor = executor
        self.shell_env = shell_env
        self.enable_background = enable_background
        self.jobs = jobs if jobs is not None else JobRegistry()
        self.sandbox = sandbox
        self.description = bash_description(
            enable_background=enable_background,
            sandbox_mode=sandbox.mode if sandbox is not None else None,
        )
        self.parameters = _parameters(background=enable_background, sandbox=sandbox is not None)

    def policy_for(self, execution: ToolExecution) -> SandboxPolicy | None:
        """The policy a call of ``execution`` runs under before any escalation (``None``
        without a sandbox): the default, in the session's mode, rooted at the caller's cwd
        (without one, this process's working directory — never the model's ``workdir``)."""
        policy = self.sandbox
        if policy is None:
            return None
        caller = execution.caller
        logged = logged_permissions(caller.session).sandbox_mode if caller is not None else None
        mode = sandbox_mode_from_log(logged)
        changes: dict[str, object] = {}
        if mode is not None and mode != policy.mode:
            changes["mode"] = mode
        cwd = execution.caller.cwd if execution.caller is not None else None
        if policy.workspace is None:  # never the model's workdir: the session's, else ours
            changes["workspace"] = Path(cwd) if cwd is not None else Path.cwd()
        return dataclasses.replace(policy, **changes) if changes else policy  # type: ignore[arg-type]

    def approval_reason(self, args: BashArgs, execution: ToolExecution) -> str | None:
        """An escalated call must be approved; one that does not widen is refused."""
        requested = getattr(args, "sandbox_permissions", None)
        policy = self.policy_for(execution)
        if requested is None or policy is None:
            return None
        problem = not_widening_problem(requested, policy.mode)
        if problem is not None:
            raise InvalidToolArgumentsError("bash", [problem])
        return escalation_reason(requested, getattr(args, "justification", None))

    async def execute(self, args: BashArgs, execution: ToolExecution) -> str:
        """Run the command (foreground) or start it as a job (background)."""
        background = _wants_background(args, execution)
        if background and not self.enable_background:
            raise BackgroundDisabledError()
        _check_non_blank("command", args.command)
        _check_non_blank("description", args.description)
        timeout = _timeout_seconds(args.timeout_ms)
        policy = self.policy_for(execution)
        requested = getattr(args, "sandbox_permissions", None)
        if policy is not None and requested is not None:
            policy = policy.widened(requested)  # approved by the registry for this call only
        request = ShellExecRequest(
            command=args.command,
            workdir=_workdir(args.workdir, execution),
            timeout=timeout,
            dsh_env=await self.shell_env.collect(execution),
            sandbox=policy,
            on_output=_output_reporter(execution) if not background else None,
        )
        spec = self.executor.resolve(request)
        if background:
            process = self.executor.start(spec)
            job = self.jobs.start(process, label=args.command, owner=execution.session_id)
            return f"started background job {job.id}"
        result = await self.executor.run(spec)
        if result.aborted:
            raise ToolAbortedError(before_dispatch=False)
        return render_result(result) + _denial_hint(result)


def _output_reporter(execution: ToolExecution) -> OutputListener | None:
    """The command's live output, both streams, to whoever watches the call (none: None)."""
    if execution.on_output is None:
        return None
    return lambda _stream, text: execution.report_output(text)


def _denial_hint(result: ShellRunResult) -> str:
    """The marker and the one-retry hint after a result the sandbox seems to have refused."""
    mode = result.sandbox_denied
    if mode is None or mode == "danger-full-access":
        return ""
    hint = retry_wider_hint(mode, "command", "this exact command")
    return f"\n{sandbox_denied_marker(mode)}\n{hint}"


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
