"""What the model is told about the bash tool (pinned by a snapshot test)."""

from __future__ import annotations

from typing import Final

from dsh_shell import DSH_ENV_PREFIX, SandboxMode

__all__ = ["bash_description"]

_COMMON: Final = (
    "Run a `bash -c` command; returns stdout and stderr.",
    "Each call is a fresh shell: pass `workdir`, not `cd`.",
    "A non-zero exit ends the result with `[exit code: N]`.",
    f"`${DSH_ENV_PREFIX}*` variables hold harness facts.",
    "Long output keeps its tail; the full output's file is named.",
    "A process left running with `&` is not collected; stop it yourself.",
)

_BACKGROUND: Final = (
    "For long commands set `run_in_background`, then use `job_output`, `job_list`, `job_kill`."
)

_NO_BACKGROUND: Final = "Commands must finish within the timeout."

_ESCALATE: Final = (
    " If it refuses a command, retry once with `sandbox_permissions` and `justification` "
    "(the user approves)."
)

_SANDBOX: Final[dict[SandboxMode, str]] = {
    "read-only": "Sandbox: read-only (writes only to `$TMPDIR`), no network." + _ESCALATE,
    "workspace-write": (
        "Sandbox: writes only in the workspace and `$TMPDIR`, no network." + _ESCALATE
    ),
    "danger-full-access": "No sandbox; do not set `sandbox_permissions`.",
}


def bash_description(*, enable_background: bool, sandbox_mode: SandboxMode | None = None) -> str:
    """The bash tool's description: one sentence per line, then the sandbox policy's sentence
    (when the tool has one), background guidance last."""
    policy = (_SANDBOX[sandbox_mode],) if sandbox_mode is not None else ()
    return "\n".join((*_COMMON, *policy, _BACKGROUND if enable_background else _NO_BACKGROUND))
