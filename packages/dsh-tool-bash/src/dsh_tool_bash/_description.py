"""What the model is told about the bash tool (pinned by a snapshot test)."""

from __future__ import annotations

from typing import Final

from dsh_shell import DSH_ENV_PREFIX, SandboxMode

__all__ = ["bash_description"]

_COMMON: Final = (
    "Run a bash command with `bash -c` and return its stdout and stderr.",
    "Every call starts a fresh shell: the working directory, variables and functions do not "
    "carry over between calls, so pass `workdir` instead of running `cd`.",
    "A non-zero exit status is reported as `[exit code: N]` on the last line of the result; "
    "check it and investigate failures before moving on.",
    f"Current harness environment facts are available to every command as managed "
    f"`${DSH_ENV_PREFIX}*` variables; inspect them when you need them.",
    "Long output is cut to its tail, and the full output is saved to a file whose path is "
    "reported when available.",
    "A process started with `&` that outlives the command keeps running after the call "
    "returns, and its later output is not collected; stop it yourself when you are done.",
)

_BACKGROUND: Final = (
    "For long-running commands set `run_in_background: true`: the call returns a job id at once; "
    "read the job's output with `job_output`, list jobs with `job_list` and stop one with "
    "`job_kill`."
)

_NO_BACKGROUND: Final = (
    "Background execution is not available; long-running commands must finish within the timeout."
)


_SANDBOX: Final[dict[SandboxMode, str]] = {
    "read-only": (
        "Commands run in a read-only sandbox (no writes but to `$TMPDIR`, no network); a "
        "command the sandbox refuses may be retried once with `sandbox_permissions` and a "
        "one-sentence `justification`, which needs the user's approval (refused when this "
        "session never asks)."
    ),
    "workspace-write": (
        "Commands run in a sandbox that may write only inside the session workspace and "
        "`$TMPDIR`, without network; a command the sandbox refuses may be retried once with "
        "`sandbox_permissions` and a one-sentence `justification`, which needs the user's "
        "approval (refused when this session never asks)."
    ),
    "danger-full-access": (
        "Commands run without a sandbox, with the user's full rights; do not set "
        "`sandbox_permissions`."
    ),
}


def bash_description(*, enable_background: bool, sandbox_mode: SandboxMode | None = None) -> str:
    """The bash tool's description: one sentence per line, then the sandbox policy's sentence
    (when the tool has one), background guidance last."""
    policy = (_SANDBOX[sandbox_mode],) if sandbox_mode is not None else ()
    return "\n".join((*_COMMON, *policy, _BACKGROUND if enable_background else _NO_BACKGROUND))
