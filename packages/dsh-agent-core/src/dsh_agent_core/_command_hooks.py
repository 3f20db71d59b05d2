"""The configured command hooks: trusted user configuration that, as in Claude Code and Codex,
runs unconfined with the user's rights, on an executor of its own (never the sandbox) with
the hooks' own time limits."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from dsh_bash_local import LocalBashConfig, LocalBashExecutor
from dsh_hooks import HOOK_EVENTS, HookRunner, HooksConfig
from dsh_session import SessionHeader
from dsh_tools import ResultSpill

__all__ = ["command_hooks", "hook_limits"]


def hook_limits(hooks: HooksConfig) -> LocalBashConfig:
    """The hook executor's limits: the hooks' own timeouts (never the model's bash cap) and room
    for a hook's JSON answer."""
    longest = max(
        [hooks.default_timeout]
        + [
            hook.timeout
            for event in HOOK_EVENTS
            for group in hooks.hooks.groups(event)
            for hook in group.hooks
            if hook.timeout is not None
        ]
    )
    return LocalBashConfig(
        timeout=hooks.default_timeout, max_timeout=longest, max_output_bytes=1024 * 1024
    )


def command_hooks(
    hooks: HooksConfig | None,
    *,
    spill: ResultSpill,
    lineage: Callable[[str], Awaitable[SessionHeader | None]],
) -> tuple[LocalBashExecutor | None, HookRunner | None]:
    """The hooks' executor and runner (both ``None`` without ``[hooks]``). ``lineage`` gives
    a session's header, live or stored: a delegated session's hooks run in its root session's
    cwd."""
    if hooks is None:
        return None, None
    executor = LocalBashExecutor(hook_limits(hooks))
    return executor, HookRunner(hooks, executor, spill=spill, lineage=lineage)
