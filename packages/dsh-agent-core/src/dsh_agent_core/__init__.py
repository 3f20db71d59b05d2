"""The composed DeepSeek Harness core: one configuration, every part built from it, the ``dsh``
command.

- ``load_config(profile=None, ...)`` reads ``<DSH_HOME>/config.toml`` (profiles, ``DSH_*``
  overrides, defaults that need no file) into a validated ``Config``.
- ``compose(config) -> Harness``: the agent loop over the configured persistence (plain JSONL
  under ``<DSH_HOME>/sessions-plain`` by default), the bash tool over the local executor with
  the managed ``DSH_*`` environment, background jobs, the session tools (``session_status``,
  ``session_create``), project instructions (``AGENTS.md``) and local skills in the session
  prefix, and models by provider.
- ``shutdown_on_signals(harness)``: the harness closed when the block ends, and cleanly on
  SIGTERM or SIGHUP (running commands killed, logs flushed and closed), then ``SystemExit(128 +
  signum)``; the ``dsh`` command runs its agents inside it.
- ``SessionStatusRow``: what ``session_status`` and ``dsh sessions`` report.
- ``SessionGrants``, ``grant_kind``, ``log_grant``: "allow for this session" approvals as every
  answerer (the terminal, an editor through ``dsh acp``) gives and logs them.
- ``pin_permissions``, ``logged_sandbox_mode``, ``logged_approval_policy``,
  ``PERMISSION_PRESETS``: a session's sandbox mode and approval policy, as its log records them.
- ``SessionMcpServers`` (``Harness.session_mcp_servers``), ``McpServerNameError``: MCP servers
  one session brings (an editor's; ``McpServerTableError`` for a table refused), their
  tools offered to it alone
  (``Harness.create(tools=...)``); ``extra_installed`` says whether an extra is installed.
- ``switch_model``, ``offered_routes``, ``route_of``: a session's route switched as the
  terminal's ``/model`` does, the routes a session may switch to; ``log_command_run``,
  ``log_command_done``: an operator command logged as the terminal logs its slash commands.
- ``TodoConfig`` (``[todo]``): the ``todo_write`` tool, offered where the front end shows plans
  (``compose(config, shows_plans=True)``, as ``dsh acp`` does) or where the config enables it;
  ``standing_plan``, ``fold_plan``, ``todos_of``, ``TodoItem``: the task list a display shows
  (``MAX_TODOS`` tasks of ``MAX_TODO_CHARS`` characters at most, as ``todo_write`` takes).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dsh_agent_core._catalog import (
        BUILTIN_CATALOGS,
        CatalogModel,
        ModelPrices,
        ProviderCatalog,
        catalog_for,
        catalog_model,
    )
    from dsh_agent_core._config import CONFIG_FILE_NAME, Config
    from dsh_agent_core._config_load import load_config
    from dsh_agent_core._config_sections import (
        BashConfig,
        InstructionsConfig,
        LocalSkillsConfig,
        PresetConfig,
        SkillsConfig,
        SystemPrompt,
        TodoConfig,
    )
    from dsh_agent_core._errors import (
        ChildWorkspaceError,
        ConfigError,
        DshError,
        HarnessClosedError,
        HomeConflictError,
        MissingExtraError,
        SandboxUnavailableError,
        UnknownPresetError,
    )
    from dsh_agent_core._extras import extra_installed
    from dsh_agent_core._grants import GRANT_COMMAND, SessionGrants, grant_kind, log_grant
    from dsh_agent_core._harness import (
        Harness,
        build_persistence,
        compose,
        interrupted_child_notice,
    )
    from dsh_agent_core._instructions import (
        INSTRUCTIONS_PLUGIN,
        InstructionFile,
        LoadedInstructions,
        ProjectInstructions,
        instruction_files,
        load_instructions,
    )
    from dsh_agent_core._model_switch import (
        COMMAND_TEXT_CHARS,
        log_command_done,
        log_command_run,
        offered_routes,
        route_of,
        switch_model,
    )
    from dsh_agent_core._model_windows import (
        DISCOVERY_TIMEOUT,
        WindowDiscovery,
        missing_window_hint,
    )
    from dsh_agent_core._models import (
        ProviderModel,
        ProviderQueryError,
        ScriptedReplies,
    )
    from dsh_agent_core._permissions import (
        PERMISSION_PRESETS,
        logged_approval_policy,
        logged_sandbox_mode,
        pin_permissions,
    )
    from dsh_agent_core._persistence_config import (
        JsonlLocation,
        PersistenceConfig,
        PersistenceLocation,
        PostgresLocation,
        SqliteLocation,
    )
    from dsh_agent_core._plans import (
        MAX_TODO_CHARS,
        MAX_TODOS,
        TodoItem,
        TodoStatus,
        fold_plan,
        standing_plan,
        todos_of,
    )
    from dsh_agent_core._provider_config import (
        BUILTIN_PROVIDERS,
        EnvRef,
        ModelConfig,
        ModelFacts,
        ProviderConfig,
        parse_route,
        split_route,
    )
    from dsh_agent_core._served import SERVED_MODELS_TIMEOUT
    from dsh_agent_core._session_mcp import (
        McpServerNameError,
        McpServerTableError,
        SessionMcpServers,
    )
    from dsh_agent_core._session_tools import (
        ChildFailedError,
        ChildWorkspaceRefusedError,
        SessionCreateTool,
        SessionHost,
        SessionResultTool,
        SessionStatusTool,
    )
    from dsh_agent_core._signals import SHUTDOWN_SIGNALS, shutdown_on_signals
    from dsh_agent_core._skills import Skill, SkillCatalog, SkillFileError, discover_skills
    from dsh_agent_core._status import SessionStatus, SessionStatusRow
    from dsh_agent_core._system_prompt import BUILTIN_SYSTEM_PROMPT, SystemPromptSource
    from dsh_agent_core._titles import FallbackTitles, fallback_title

__all__ = [
    "BUILTIN_CATALOGS",
    "BUILTIN_PROVIDERS",
    "BUILTIN_SYSTEM_PROMPT",
    "COMMAND_TEXT_CHARS",
    "CONFIG_FILE_NAME",
    "DISCOVERY_TIMEOUT",
    "GRANT_COMMAND",
    "INSTRUCTIONS_PLUGIN",
    "MAX_TODOS",
    "MAX_TODO_CHARS",
    "PERMISSION_PRESETS",
    "SERVED_MODELS_TIMEOUT",
    "SHUTDOWN_SIGNALS",
    "BashConfig",
    "CatalogModel",
    "ChildFailedError",
    "ChildWorkspaceError",
    "ChildWorkspaceRefusedError",
    "Config",
    "ConfigError",
    "DshError",
    "EnvRef",
    "FallbackTitles",
    "Harness",
    "HarnessClosedError",
    "HomeConflictError",
    "InstructionFile",
    "InstructionsConfig",
    "JsonlLocation",
    "LoadedInstructions",
    "LocalSkillsConfig",
    "McpServerNameError",
    "McpServerTableError",
    "MissingExtraError",
    "ModelConfig",
    "ModelFacts",
    "ModelPrices",
    "PersistenceConfig",
    "PersistenceLocation",
    "PostgresLocation",
    "PresetConfig",
    "ProjectInstructions",
    "ProviderCatalog",
    "ProviderConfig",
    "ProviderModel",
    "ProviderQueryError",
    "SandboxUnavailableError",
    "ScriptedReplies",
    "SessionCreateTool",
    "SessionGrants",
    "SessionHost",
    "SessionMcpServers",
    "SessionResultTool",
    "SessionStatus",
    "SessionStatusRow",
    "SessionStatusTool",
    "Skill",
    "SkillCatalog",
    "SkillFileError",
    "SkillsConfig",
    "SqliteLocation",
    "SystemPrompt",
    "SystemPromptSource",
    "TodoConfig",
    "TodoItem",
    "TodoStatus",
    "UnknownPresetError",
    "WindowDiscovery",
    "build_persistence",
    "catalog_for",
    "catalog_model",
    "compose",
    "discover_skills",
    "extra_installed",
    "fallback_title",
    "fold_plan",
    "grant_kind",
    "instruction_files",
    "interrupted_child_notice",
    "load_config",
    "load_instructions",
    "log_command_done",
    "log_command_run",
    "log_grant",
    "logged_approval_policy",
    "logged_sandbox_mode",
    "missing_window_hint",
    "offered_routes",
    "parse_route",
    "pin_permissions",
    "route_of",
    "shutdown_on_signals",
    "split_route",
    "standing_plan",
    "switch_model",
    "todos_of",
]

# Every name is imported from its module when first asked for (PEP 562): importing the package,
# as the `dsh` command does before it parses its arguments, costs nothing of the harness.
_HOMES: dict[str, str] = {
    "BUILTIN_CATALOGS": "_catalog",
    "CatalogModel": "_catalog",
    "ModelPrices": "_catalog",
    "ProviderCatalog": "_catalog",
    "catalog_for": "_catalog",
    "catalog_model": "_catalog",
    "BUILTIN_PROVIDERS": "_provider_config",
    "CONFIG_FILE_NAME": "_config",
    "BashConfig": "_config_sections",
    "Config": "_config",
    "InstructionsConfig": "_config_sections",
    "LocalSkillsConfig": "_config_sections",
    "ModelConfig": "_provider_config",
    "ModelFacts": "_provider_config",
    "PersistenceConfig": "_persistence_config",
    "PersistenceLocation": "_persistence_config",
    "JsonlLocation": "_persistence_config",
    "SqliteLocation": "_persistence_config",
    "PostgresLocation": "_persistence_config",
    "PresetConfig": "_config_sections",
    "ProviderConfig": "_provider_config",
    "EnvRef": "_provider_config",
    "SkillsConfig": "_config_sections",
    "SystemPrompt": "_config_sections",
    "TodoConfig": "_config_sections",
    "MAX_TODOS": "_plans",
    "MAX_TODO_CHARS": "_plans",
    "TodoItem": "_plans",
    "TodoStatus": "_plans",
    "fold_plan": "_plans",
    "standing_plan": "_plans",
    "todos_of": "_plans",
    "load_config": "_config_load",
    "parse_route": "_provider_config",
    "split_route": "_provider_config",
    "ChildWorkspaceError": "_errors",
    "ConfigError": "_errors",
    "DshError": "_errors",
    "HarnessClosedError": "_errors",
    "HomeConflictError": "_errors",
    "MissingExtraError": "_errors",
    "SandboxUnavailableError": "_errors",
    "UnknownPresetError": "_errors",
    "extra_installed": "_extras",
    "GRANT_COMMAND": "_grants",
    "SessionGrants": "_grants",
    "grant_kind": "_grants",
    "log_grant": "_grants",
    "Harness": "_harness",
    "build_persistence": "_harness",
    "compose": "_harness",
    "interrupted_child_notice": "_harness",
    "INSTRUCTIONS_PLUGIN": "_instructions",
    "InstructionFile": "_instructions",
    "LoadedInstructions": "_instructions",
    "ProjectInstructions": "_instructions",
    "instruction_files": "_instructions",
    "load_instructions": "_instructions",
    "COMMAND_TEXT_CHARS": "_model_switch",
    "log_command_done": "_model_switch",
    "log_command_run": "_model_switch",
    "offered_routes": "_model_switch",
    "route_of": "_model_switch",
    "switch_model": "_model_switch",
    "DISCOVERY_TIMEOUT": "_model_windows",
    "WindowDiscovery": "_model_windows",
    "missing_window_hint": "_model_windows",
    "ProviderModel": "_models",
    "ProviderQueryError": "_models",
    "ScriptedReplies": "_models",
    "SERVED_MODELS_TIMEOUT": "_served",
    "McpServerNameError": "_session_mcp",
    "McpServerTableError": "_session_mcp",
    "SessionMcpServers": "_session_mcp",
    "PERMISSION_PRESETS": "_permissions",
    "logged_approval_policy": "_permissions",
    "logged_sandbox_mode": "_permissions",
    "pin_permissions": "_permissions",
    "ChildFailedError": "_session_tools",
    "ChildWorkspaceRefusedError": "_session_tools",
    "SessionCreateTool": "_session_tools",
    "SessionHost": "_session_tools",
    "SessionResultTool": "_session_tools",
    "SessionStatusTool": "_session_tools",
    "SHUTDOWN_SIGNALS": "_signals",
    "shutdown_on_signals": "_signals",
    "Skill": "_skills",
    "SkillCatalog": "_skills",
    "SkillFileError": "_skills",
    "discover_skills": "_skills",
    "SessionStatus": "_status",
    "SessionStatusRow": "_status",
    "BUILTIN_SYSTEM_PROMPT": "_system_prompt",
    "SystemPromptSource": "_system_prompt",
    "FallbackTitles": "_titles",
    "fallback_title": "_titles",
}


def __getattr__(name: str) -> Any:
    module = _HOMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # asked once: the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
