"""The model-facing ``bash`` tool of DSH, its ``shell_env`` registry, and background jobs.

- `ShellEnvRegistry`: who owns which managed ``DSH_*`` key; a fresh read-only snapshot per
  execution (``DSH_HOME``, ``DSH_SHELL=1``, ``DSH_SESSION_ID`` with an agent, plus contributors).
- `BashTool`: the ``bash`` `dsh_tools.ToolDefinition` over any `dsh_shell.ShellExecutor`.
- `JobRegistry` and `job_tools`: background jobs owned by sessions, and the ``job_output``,
  ``job_kill`` and ``job_list`` tools.
"""

from dsh_tool_bash._bash import (
    BashArgs,
    BashBackgroundArgs,
    BashBackgroundSandboxArgs,
    BashSandboxArgs,
    BashTool,
)
from dsh_tool_bash._description import bash_description
from dsh_tool_bash._errors import (
    BackgroundDisabledError,
    DuplicateContributorError,
    ForeignJobError,
    InvalidContributorError,
    InvalidEnvKeyError,
    JobError,
    KeyOwnershipError,
    MissingKeyDescriptionError,
    NonStringEnvValueError,
    ReservedShellEnvKeyError,
    ShellEnvDeclarationError,
    ShellEnvError,
    ShellEnvResolveError,
    UndeclaredEnvKeyError,
    UnknownJobError,
)
from dsh_tool_bash._job_tools import (
    JobIdArgs,
    JobKillTool,
    JobListArgs,
    JobListTool,
    JobOutputArgs,
    JobOutputTool,
    job_tools,
)
from dsh_tool_bash._jobs import (
    DEFAULT_WAIT,
    MAX_WAIT,
    Job,
    JobListener,
    JobRegistry,
    job_status_line,
)
from dsh_tool_bash._shell_env import (
    BUILTIN_CONTRIBUTOR,
    DSH_HOME_KEY,
    DSH_SESSION_ID_KEY,
    DSH_SHELL_KEY,
    RESERVED_KEYS,
    ShellEnvDeclaration,
    ShellEnvRegistry,
)

__all__ = [
    "BUILTIN_CONTRIBUTOR",
    "DEFAULT_WAIT",
    "DSH_HOME_KEY",
    "DSH_SESSION_ID_KEY",
    "DSH_SHELL_KEY",
    "MAX_WAIT",
    "RESERVED_KEYS",
    "BackgroundDisabledError",
    "BashArgs",
    "BashBackgroundArgs",
    "BashBackgroundSandboxArgs",
    "BashSandboxArgs",
    "BashTool",
    "DuplicateContributorError",
    "ForeignJobError",
    "InvalidContributorError",
    "InvalidEnvKeyError",
    "Job",
    "JobError",
    "JobIdArgs",
    "JobKillTool",
    "JobListArgs",
    "JobListTool",
    "JobListener",
    "JobOutputArgs",
    "JobOutputTool",
    "JobRegistry",
    "KeyOwnershipError",
    "MissingKeyDescriptionError",
    "NonStringEnvValueError",
    "ReservedShellEnvKeyError",
    "ShellEnvDeclaration",
    "ShellEnvDeclarationError",
    "ShellEnvError",
    "ShellEnvRegistry",
    "ShellEnvResolveError",
    "UndeclaredEnvKeyError",
    "UnknownJobError",
    "bash_description",
    "job_status_line",
    "job_tools",
]
