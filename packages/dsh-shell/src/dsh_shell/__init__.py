"""The DSH shell seam: what executors run, what they return, and how it is rendered.

Plain dataclasses and protocols, no dependencies. ``dsh_shell.testing`` holds the executor
contract suite (``pip install dsh-shell[testing]`` for its pytest base class).
"""

from dsh_shell._child_env import (
    SCRUBBED_STARTUP_NAMES,
    TERMINAL_DEFAULTS,
    compose_child_environment,
    is_credential_name,
    scrub_parent_environment,
)
from dsh_shell._errors import (
    DshEnvironmentError,
    ReservedEnvKeyError,
    ShellCancelledError,
    ShellError,
    ShellNotFoundError,
    ShellSpawnError,
    ShellValueError,
    ShellWorkdirError,
)
from dsh_shell._executor import ShellExecutor, ShellProcess
from dsh_shell._namespace import (
    DSH_ENV_PREFIX,
    DshEnvironment,
    ShellEnvContributor,
    is_dsh_key,
    validate_dsh_environment,
    validate_dsh_key,
    validate_ordinary_env,
)
from dsh_shell._render import (
    NO_NEW_OUTPUT,
    NO_OUTPUT,
    STDERR_HEADER,
    UNAVAILABLE,
    ExitStatus,
    ProcessOutcome,
    exit_code_marker,
    lossy_notice,
    merge_streams,
    parse_exit_status,
    process_outcome,
    render_process_read,
    render_result,
    signal_marker,
    timeout_marker,
    truncation_notice,
)
from dsh_shell._request import (
    ShellExecRequest,
    ShellExecSpec,
    check_byte_count,
    check_timeout,
    resolve_request,
)
from dsh_shell._results import CollectedOutput, ProcessRead, ProcessStatus, ShellRunResult

__all__ = [
    "DSH_ENV_PREFIX",
    "NO_NEW_OUTPUT",
    "NO_OUTPUT",
    "SCRUBBED_STARTUP_NAMES",
    "STDERR_HEADER",
    "TERMINAL_DEFAULTS",
    "UNAVAILABLE",
    "CollectedOutput",
    "DshEnvironment",
    "DshEnvironmentError",
    "ExitStatus",
    "ProcessOutcome",
    "ProcessRead",
    "ProcessStatus",
    "ReservedEnvKeyError",
    "ShellCancelledError",
    "ShellEnvContributor",
    "ShellError",
    "ShellExecRequest",
    "ShellExecSpec",
    "ShellExecutor",
    "ShellNotFoundError",
    "ShellProcess",
    "ShellRunResult",
    "ShellSpawnError",
    "ShellValueError",
    "ShellWorkdirError",
    "check_byte_count",
    "check_timeout",
    "compose_child_environment",
    "exit_code_marker",
    "is_credential_name",
    "is_dsh_key",
    "lossy_notice",
    "merge_streams",
    "parse_exit_status",
    "process_outcome",
    "render_process_read",
    "render_result",
    "resolve_request",
    "scrub_parent_environment",
    "signal_marker",
    "timeout_marker",
    "truncation_notice",
    "validate_dsh_environment",
    "validate_dsh_key",
    "validate_ordinary_env",
]
