"""The JSON each hook reads on stdin, in the dialect's own field names.

Every payload starts with the base fields:

- Claude Code: ``session_id``, ``transcript_path`` (always ``""``), ``cwd``, ``hook_event_name``;
- Codex: the same with ``transcript_path`` always ``null``, then ``model`` and
  ``permission_mode`` (``"default"``); its turn-scoped events (all but ``SessionStart``) add
  ``turn_id`` (the turn number as a string).

``transcript_path`` never names the log (no hook, like no bash child, is told where the log
is): building a payload reads the live session only and never materializes or flushes
anything. Per event, both dialects add
``SessionStart``: ``source`` (``startup`` | ``resume``); ``UserPromptSubmit``: ``prompt`` (the
text of the entering messages); ``PreToolUse``: ``tool_name``, ``tool_input``, ``tool_use_id``;
``PostToolUse``: those and ``tool_response`` (the result's text); ``Stop``:
``stop_hook_active`` (true once a Stop hook has continued this turn) and, in Codex,
``last_assistant_message``. ``tool_input`` is the call's arguments (Claude Code) or
``{"command": <its command argument or "">}`` (Codex's shell shape); Claude Code payloads name
the built-in tools as Claude Code does (``bash`` is ``Bash``, ``read`` is ``Read``, …: see
`CLAUDE_CODE_TOOL_NAMES`), so scripts testing ``tool_name`` work unchanged. Claude Code's subagent
events carry the child session's base fields and ``agent_id`` (the child's session id) and
``agent_type`` (its preset, else ``general-purpose``); ``SubagentStop`` adds
``stop_hook_active`` and ``agent_transcript_path`` (always ``""``, as ``transcript_path``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dsh_hooks._config import HookEventName, HooksConfig

__all__ = ["CLAUDE_CODE_TOOL_NAMES", "PayloadBuilder", "thaw_json", "tool_aliases"]

CLAUDE_CODE_TOOL_NAMES: Mapping[str, str] = {
    "bash": "Bash",
    "read": "Read",
    "write": "Write",
    "edit": "Edit",
    "glob": "Glob",
    "grep": "Grep",
}
"""The built-in tools under Claude Code's names (their arguments already have its shapes):
matchers of either dialect match both names, and Claude Code payloads carry its name."""


def tool_aliases(tool_name: str) -> tuple[str, ...]:
    """The other names a matcher may know ``tool_name`` by (``bash`` is also ``Bash``)."""
    alias = CLAUDE_CODE_TOOL_NAMES.get(tool_name)
    return (alias,) if alias is not None else ()


def thaw_json(value: Any) -> Any:
    """Plain JSON (dicts and lists) from a deep-frozen ``ToolExecution.arguments``."""
    if isinstance(value, Mapping):
        return {key: thaw_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw_json(item) for item in value]
    return value


class PayloadBuilder:
    """Builds the payloads of one configuration's dialect (see the module docs)."""

    __slots__ = ("_codex", "_config")

    def __init__(self, config: HooksConfig) -> None:
        self._config = config
        self._codex = config.dialect == "codex"

    def base(
        self, event: HookEventName, session_id: str, cwd: str | None, turn: int | None
    ) -> dict[str, Any]:
        """The fields every payload of ``event`` starts with (``turn`` only for Codex)."""
        payload: dict[str, Any] = {
            "session_id": session_id,
            "transcript_path": None if self._codex else "",
            "cwd": cwd if cwd is not None else os.getcwd(),
            "hook_event_name": event,
        }
        if self._codex:
            payload["model"] = self._config.model
            payload["permission_mode"] = "default"
            if turn is not None:
                payload["turn_id"] = str(turn)
        return payload

    def session_start(self, session_id: str, cwd: str | None, source: str) -> dict[str, Any]:
        """``SessionStart``."""
        return {**self.base("SessionStart", session_id, cwd, None), "source": source}

    def user_prompt_submit(
        self, session_id: str, cwd: str | None, turn: int, prompt: str
    ) -> dict[str, Any]:
        """``UserPromptSubmit``."""
        return {**self.base("UserPromptSubmit", session_id, cwd, turn), "prompt": prompt}

    def _tool(
        self,
        event: HookEventName,
        session_id: str,
        cwd: str | None,
        turn: int | None,
        tool_name: str,
        arguments: Mapping[str, Any],
        call_id: str,
    ) -> dict[str, Any]:
        tool_input: Any
        if self._codex:
            command = arguments.get("command")
            tool_input = {"command": command if isinstance(command, str) else ""}
        else:
            tool_input = thaw_json(arguments)
            tool_name = CLAUDE_CODE_TOOL_NAMES.get(tool_name, tool_name)
        return {
            **self.base(event, session_id, cwd, turn),
            "tool_name": tool_name,
            "tool_input": tool_input,
            "tool_use_id": call_id,
        }

    def pre_tool_use(
        self,
        session_id: str,
        cwd: str | None,
        turn: int | None,
        tool_name: str,
        arguments: Mapping[str, Any],
        call_id: str,
    ) -> dict[str, Any]:
        """``PreToolUse``."""
        return self._tool("PreToolUse", session_id, cwd, turn, tool_name, arguments, call_id)

    def post_tool_use(
        self,
        session_id: str,
        cwd: str | None,
        turn: int | None,
        tool_name: str,
        arguments: Mapping[str, Any],
        call_id: str,
        response: str,
    ) -> dict[str, Any]:
        """``PostToolUse``."""
        payload = self._tool("PostToolUse", session_id, cwd, turn, tool_name, arguments, call_id)
        payload["tool_response"] = response
        return payload

    def stop(
        self,
        session_id: str,
        cwd: str | None,
        turn: int,
        *,
        active: bool,
        last_assistant_message: str | None,
    ) -> dict[str, Any]:
        """``Stop``."""
        payload = {**self.base("Stop", session_id, cwd, turn), "stop_hook_active": active}
        if self._codex:
            payload["last_assistant_message"] = last_assistant_message
        return payload

    def subagent_start(self, session_id: str, cwd: str | None, agent_type: str) -> dict[str, Any]:
        """``SubagentStart`` (Claude Code)."""
        return {
            **self.base("SubagentStart", session_id, cwd, None),
            "agent_id": session_id,
            "agent_type": agent_type,
        }

    def subagent_stop(
        self, session_id: str, cwd: str | None, turn: int, agent_type: str, *, active: bool
    ) -> dict[str, Any]:
        """``SubagentStop`` (Claude Code)."""
        return {
            **self.base("SubagentStop", session_id, cwd, turn),
            "stop_hook_active": active,
            "agent_id": session_id,
            "agent_type": agent_type,
            "agent_transcript_path": "",
        }
