"""The ``job_output``, ``job_kill`` and ``job_list`` tools over a `JobRegistry`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from dsh_tool_bash._jobs import DEFAULT_WAIT, MAX_WAIT, JobRegistry
from dsh_tool_bash._schema import (
    OptionalNumber,
    model_facing_schema,
    without_default,
)
from dsh_tools import InvalidToolArgumentsError, ToolDefinition, ToolExecution

__all__ = [
    "JobIdArgs",
    "JobKillTool",
    "JobListArgs",
    "JobListTool",
    "JobOutputArgs",
    "JobOutputTool",
    "job_tools",
]


class JobIdArgs(BaseModel):
    """Parameters naming one job (``job_kill``)."""

    model_config = ConfigDict(
        extra="ignore",
        title="job_kill",
        frozen=True,
        strict=True,
        json_schema_extra=model_facing_schema,
    )

    job_id: str = Field(description="The id bash reported.")


class JobOutputArgs(JobIdArgs):
    """Parameters of ``job_output``."""

    model_config = ConfigDict(title="job_output")

    wait: bool = Field(
        default=False,
        description="Wait (up to timeout_ms) for the job to end first.",
    )
    timeout_ms: OptionalNumber = Field(
        default=None,
        description=f"Default {round(DEFAULT_WAIT * 1000)}, at most {round(MAX_WAIT * 1000)}.",
        json_schema_extra=without_default,
    )


class JobListArgs(BaseModel):
    """``job_list`` takes no parameters."""

    model_config = ConfigDict(
        extra="ignore",
        title="job_list",
        frozen=True,
        strict=True,
        json_schema_extra=model_facing_schema,
    )


class JobOutputTool(ToolDefinition[JobOutputArgs]):
    """``job_output``: the output a job produced since the previous read, then its status."""

    name = "job_output"
    description = "A background job's output since the last read, then its status."
    parameters = JobOutputArgs

    def __init__(self, jobs: JobRegistry) -> None:
        self.jobs = jobs

    async def execute(self, args: JobOutputArgs, execution: ToolExecution) -> str:
        """Read (optionally after waiting) the job's new output."""
        timeout = None
        if args.timeout_ms is not None:
            if not args.timeout_ms >= 0:
                problem = f"invalid timeout_ms: expected a number >= 0, got {args.timeout_ms!r}"
                raise InvalidToolArgumentsError(self.name, [problem])
            timeout = args.timeout_ms / 1000
        return await self.jobs.output(
            args.job_id, execution.session_id, wait=args.wait, wait_timeout=timeout
        )

    def is_concurrency_safe(self, args: JobOutputArgs) -> bool:
        """Reads of different jobs do not interfere."""
        return True


class JobKillTool(ToolDefinition[JobIdArgs]):
    """``job_kill``: terminate a background job of the calling session."""

    name = "job_kill"
    description = "Stop a background job."
    parameters = JobIdArgs

    def __init__(self, jobs: JobRegistry) -> None:
        self.jobs = jobs

    async def execute(self, args: JobIdArgs, execution: ToolExecution) -> str:
        """Kill the job (its whole process group)."""
        return self.jobs.kill(args.job_id, execution.session_id)


class JobListTool(ToolDefinition[JobListArgs]):
    """``job_list``: the calling session's background jobs, one line each."""

    name = "job_list"
    description = "List your background jobs."
    parameters = JobListArgs

    def __init__(self, jobs: JobRegistry) -> None:
        self.jobs = jobs

    async def execute(self, args: JobListArgs, execution: ToolExecution) -> str:
        """List the jobs the calling session may see."""
        return self.jobs.list_lines(execution.session_id)

    def is_concurrency_safe(self, args: JobListArgs) -> bool:
        """Listing changes nothing."""
        return True


def job_tools(
    jobs: JobRegistry,
) -> tuple[JobOutputTool, JobKillTool, JobListTool]:
    """The three job tools over ``jobs`` (register them next to a background-enabled bash)."""
    return JobOutputTool(jobs), JobKillTool(jobs), JobListTool(jobs)
