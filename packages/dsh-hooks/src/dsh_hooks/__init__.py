"""Claude Code and Codex compatible command hooks for DSH agents.

``HookRunner(config, executor)`` runs the command hooks of a `HooksConfig` (either dialect's
``hooks`` table) through a ``dsh_shell.ShellExecutor``: the payload as JSON on stdin, in the
session's cwd (a delegated session's: its root session's, given ``lineage``), with a timeout
(600 s unless the hook sets one), with no ``DSH_*`` variables unless the configuration gives
some. ``runner.install(extensions, tools)`` mounts the
events on a loop's ``dsh_agent.Extensions`` (``session_start``, ``pre_step``,
``turn_stopping``) and a ``dsh_tools.ToolRegistry`` (pre- and post-execute hooks):
``SessionStart``, ``UserPromptSubmit``, ``PreToolUse``, ``PostToolUse``, ``Stop``, and Claude
Code's ``SubagentStart`` / ``SubagentStop`` for child sessions.

Existing hook scripts work unchanged: the payload fields, the exit-code-2 convention and the
JSON answers are the dialect's own (see `PayloadBuilder`, `parse_hook_output` and
`HookRunner`). ``transcript_path`` is always ``""`` (Claude Code) or ``null`` (Codex).

Every hook text that enters the model's context is bounded by the tool results' spill rule
(``dsh_tools.ResultSpill``): over 50,000 bytes, its head and tail and the path of the file
that keeps it whole. A hook's stdout is read up to `HOOK_OUTPUT_MAX_BYTES`.
"""

from dsh_hooks._config import (
    DEFAULT_HOOK_TIMEOUT,
    DIALECT_EVENTS,
    HOOK_EVENTS,
    MAX_HOOK_FILE_BYTES,
    CommandHook,
    HookDialect,
    HookEventName,
    HookFileError,
    HooksConfig,
    HookTable,
    MatcherGroup,
)
from dsh_hooks._matcher import Matcher
from dsh_hooks._output import (
    HookDecision,
    HookOutput,
    MergedOutcome,
    merge_outputs,
    parse_hook_output,
)
from dsh_hooks._payloads import CLAUDE_CODE_TOOL_NAMES, PayloadBuilder, tool_aliases
from dsh_hooks._run import HOOK_OUTPUT_MAX_BYTES
from dsh_hooks._runner import HOOK_BLOCKED_CODE, HookRunner, plugin_name

__all__ = [
    "CLAUDE_CODE_TOOL_NAMES",
    "DEFAULT_HOOK_TIMEOUT",
    "DIALECT_EVENTS",
    "HOOK_BLOCKED_CODE",
    "HOOK_EVENTS",
    "HOOK_OUTPUT_MAX_BYTES",
    "MAX_HOOK_FILE_BYTES",
    "CommandHook",
    "HookDecision",
    "HookDialect",
    "HookEventName",
    "HookFileError",
    "HookOutput",
    "HookRunner",
    "HookTable",
    "HooksConfig",
    "Matcher",
    "MatcherGroup",
    "MergedOutcome",
    "PayloadBuilder",
    "merge_outputs",
    "parse_hook_output",
    "plugin_name",
    "tool_aliases",
]
