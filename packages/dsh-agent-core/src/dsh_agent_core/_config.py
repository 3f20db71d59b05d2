"""The one configuration: TOML at ``<DSH_HOME>/config.toml``, named profiles, environment
overrides, and defaults that work with no file at all."""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from dsh_agent import ApprovalPolicy
from dsh_agent_core._catalog import ModelPrices, catalog_for
from dsh_agent_core._errors import ConfigError
from dsh_agent_core._extras import McpSection
from dsh_agent_core._files import MAX_CONFIG_BYTES, UnreadableFileError, read_regular_file
from dsh_agent_core._persistence_config import PersistenceConfig, PersistenceLocation
from dsh_agent_core._system_prompt import BUILTIN_SYSTEM_PROMPT, SystemPromptSource
from dsh_compaction import CompactionConfig, estimate_content
from dsh_hooks import HOOK_EVENTS, HooksConfig
from dsh_paths import DshHomeError, resolve_dsh_home
from dsh_shell import SANDBOX_MODES, SandboxMode

__all__ = [
    "BUILTIN_PROVIDERS",
    "CONFIG_FILE_NAME",
    "BashConfig",
    "Config",
    "EnvRef",
    "InstructionsConfig",
    "LocalSkillsConfig",
    "ModelConfig",
    "ModelFacts",
    "PersistenceConfig",
    "PresetConfig",
    "ProviderConfig",
    "SandboxConfig",
    "SkillsConfig",
    "SystemPrompt",
    "TodoConfig",
    "load_config",
    "parse_route",
    "split_route",
]

CONFIG_FILE_NAME = "config.toml"
"""The config file's name inside the DSH home."""

MAX_SYSTEM_FILE_BYTES = 256 * 1024
"""The largest ``system_file`` read (256 KiB)."""

_STRICT = ConfigDict(extra="forbid", frozen=True)


def parse_route(route: str, *, where: str = "model") -> tuple[str, str]:
    """``"provider:model"`` as ``(provider, model)``; raises :class:`ConfigError` naming
    ``where`` when it is not of that form."""
    provider, sep, model = route.partition(":")
    if not sep or not provider.strip() or not model.strip():
        raise ConfigError(where, f"{route!r} is not of the form provider:model")
    return provider.strip(), model.strip()


def split_route(route: str, *, where: str = "model") -> tuple[str, str | None]:
    """A route that may leave out its model: ``"provider:model"`` as ``(provider, model)``
    (split at the first colon, so ``"ollama:qwen2.5-coder:7b"`` names the model
    ``qwen2.5-coder:7b``), a bare ``"provider"`` as ``(provider, None)``: the model is then the
    one the provider's server serves. Raises :class:`ConfigError` naming ``where`` for an empty
    provider or an empty model after the colon."""
    if ":" in route:
        return parse_route(route, where=where)
    if not route.strip():
        raise ConfigError(where, f"{route!r} is not of the form provider:model (or provider)")
    return route.strip(), None


class EnvRef(BaseModel):
    """A value read from the environment variable ``env`` when it is used, never written in
    the configuration: ``Authorization = { env = "LLM_AUTH" }`` in a provider's ``headers``.
    The variable's value is used verbatim (put the whole ``Bearer …`` in it)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    env: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The environment variable's name."""


_REQUEST_FIELDS = frozenset({"model", "messages", "tools", "stream", "stream_options"})
"""The body fields every request sets itself (``extra_body`` may not)."""

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def header_value_ok(value: str) -> bool:
    """Whether ``value`` can be sent as an HTTP header value: printable ASCII and tabs."""
    return all(char == "\t" or " " <= char <= "~" for char in value)


def _json_only(value: Any, where: str) -> None:
    """Refuse a TOML value that has no JSON form (a date or time), naming where it is."""
    if isinstance(value, dict):
        for key, item in value.items():
            _json_only(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _json_only(item, f"{where}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: {value!r} has no JSON form")
    elif not (value is None or isinstance(value, str | int | float | bool)):
        raise ValueError(f"{where}: a {type(value).__name__} has no JSON form")


class ProviderConfig(BaseModel):
    """A model provider. ``openai-compatible`` speaks Chat Completions at ``base_url`` with the
    key read from the environment variable ``api_key_env`` (the key itself is never in the
    config); ``scripted`` is the keyless model of ``dsh demo`` and tests, answering each request
    with the next of ``replies`` (cycling). ``extra_body``, ``headers``, ``timeout`` and
    ``tool_choice`` shape every request an ``openai-compatible`` provider sends."""

    model_config = _STRICT

    kind: Literal["openai-compatible", "scripted"] = "openai-compatible"
    base_url: str | None = None
    api_key_env: str | None = None
    reasoning_replay: Literal["current-turn", "never", "always"] = "current-turn"
    replies: tuple[str, ...] = ("Hello from the scripted model.",)
    context_window: int | None = Field(default=None, gt=0)
    """The window in tokens of this provider's models (``None``: unknown)."""
    context_windows: dict[str, int] = Field(default_factory=dict)
    """Per model name, overriding ``context_window`` (``{"deepseek-v4-flash" = 65536}``)."""

    @field_validator("context_windows")
    @classmethod
    def _positive_windows(cls, windows: dict[str, int]) -> dict[str, int]:
        for name, window in windows.items():
            if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
                raise ValueError(f"{name}: {window!r} is not a positive number of tokens")
        return windows

    def window_of(self, model: str) -> int | None:
        """The context window of ``model``: its own entry, else the provider's."""
        return self.context_windows.get(model, self.context_window)

    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Fields added to every request body (``{ top_k = 20 }``, ``{ chat_template_kwargs = {…} }``);
    the fields dsh sets itself are refused."""
    headers: dict[str, str | EnvRef] = Field(default_factory=dict)
    """HTTP headers sent with every request: a literal string, or ``{ env = "VAR" }`` for a
    secret read from the environment when the provider is first used (never shown)."""
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """The read timeout in seconds: the longest silence allowed while waiting for the answer's
    next bytes, the first included (default: 300)."""
    tool_choice: Literal["auto", "none", "required"] | dict[str, Any] | None = None
    """Sent as ``tool_choice`` with every request that offers tools: ``"auto"``, ``"none"``,
    ``"required"``, or a table (``{ type = "function", function = { name = "bash" } }``)."""

    @field_validator("extra_body")
    @classmethod
    def _extra_fields(cls, body: dict[str, Any]) -> dict[str, Any]:
        for key, value in body.items():
            if key in _REQUEST_FIELDS:
                raise ValueError(f"{key}: dsh sets this field of every request itself")
            if key == "tool_choice":
                raise ValueError("tool_choice: set it with the provider's tool_choice key")
            _json_only(value, key)
        return body

    @field_validator("headers")
    @classmethod
    def _header_names(cls, headers: dict[str, str | EnvRef]) -> dict[str, str | EnvRef]:
        for name, value in headers.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an HTTP header name")
            if isinstance(value, str) and not header_value_ok(value):
                raise ValueError(f"{name}: a header value is printable ASCII on one line")
        return headers

    @field_validator("tool_choice")
    @classmethod
    def _choice_table(cls, choice: Any) -> Any:
        if isinstance(choice, dict):
            if not isinstance(choice.get("type"), str):
                raise ValueError(
                    'a tool_choice table needs a type, as in { type = "function", '
                    'function = { name = "bash" } }'
                )
            _json_only(choice, "tool_choice")
        return choice

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, name: str | None) -> str | None:
        if name is not None and (not name or not name.replace("_", "").isalnum()):
            raise ValueError(f"{name!r} is not an environment variable name")
        return name


LLAMA_CPP_URL = "http://127.0.0.1:8080/v1"
"""llama.cpp's ``llama-server`` on its default port."""

BUILTIN_PROVIDERS: dict[str, ProviderConfig] = {
    "deepseek": ProviderConfig(base_url="https://api.deepseek.com", api_key_env="DEEPSEEK_API_KEY"),
    "openai": ProviderConfig(base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY"),
    "scripted": ProviderConfig(kind="scripted"),
    # local servers on their default ports; no key is sent
    "llamacpp": ProviderConfig(base_url=LLAMA_CPP_URL),
    "ollama": ProviderConfig(base_url="http://127.0.0.1:11434/v1"),
    "vllm": ProviderConfig(base_url="http://127.0.0.1:8000/v1"),
    "local": ProviderConfig(base_url=LLAMA_CPP_URL),
}
"""Providers every config has unless it redefines them (a ``[providers.NAME]`` table of the
same name is laid over the built-in one): ``deepseek`` and ``openai`` (keys from
``DEEPSEEK_API_KEY`` and ``OPENAI_API_KEY``), ``scripted``, and the keyless local servers
``llamacpp`` (``llama-server``, port 8080), ``ollama`` (11434) and ``vllm`` (8000), and
``local``: llama.cpp's address until ``[providers.local] base_url`` points it elsewhere."""


class ModelConfig(BaseModel):
    """``[models."provider:model"]``: what the configuration says of one routed model.
    ``prices`` (USD per million tokens: ``input``, ``cached_input``, ``output``) replace the
    catalog's list prices of a built-in provider's model, or give a model its prices.
    ``images = true`` says the model takes images in the user's messages (nothing tells dsh
    otherwise, so a model is taken to read text only unless this says so)."""

    model_config = _STRICT

    prices: ModelPrices | None = None
    images: bool = False


class ModelFacts(BaseModel):
    """One model's resolved facts: its context window and output limit in tokens and its
    prices (``None``: unknown), and where each came from (``context_window_from`` names the
    config key, or ``catalog``; ``prices_from`` likewise; ``checked`` is the date the catalog
    entry was checked; ``note`` says when a model is an alias or retired)."""

    model_config = ConfigDict(frozen=True)

    context_window: int | None = None
    context_window_from: str | None = None
    max_output: int | None = None
    prices: ModelPrices | None = None
    prices_from: str | None = None
    checked: str | None = None
    note: str | None = None


class SystemPrompt(BaseModel):
    """A resolved system prompt: its ``text`` (``append_system`` included), its ``source``
    (``built-in``, ``system``, ``system_file`` or ``preset``) and whether ``append_system``
    was added."""

    model_config = ConfigDict(frozen=True)

    text: str
    source: SystemPromptSource
    appended: bool = False


class PresetConfig(BaseModel):
    """What ``session_create``'s ``preset`` (and ``dsh run --preset``) names: a system prompt,
    the tool names the agent gets (``None``: every tool), and a model route."""

    model_config = _STRICT

    system: str | None = None
    tools: tuple[str, ...] | None = None
    model: str | None = None

    @field_validator("model")
    @classmethod
    def _is_a_route(cls, route: str | None) -> str | None:
        if route is not None:
            split_route(route, where="presets.*.model")
        return route


class LocalSkillsConfig(BaseModel):
    """Local skills: ``SKILL.md`` folders under ``<DSH_HOME>/skills/`` and the project's
    ``.dsh/skills/``. ``dsh_home``, when given, must resolve to the same home as the top level."""

    model_config = _STRICT

    enabled: bool = True
    dsh_home: str | None = None


class SkillsConfig(BaseModel):
    """Skill sources (only ``local`` today)."""

    model_config = _STRICT

    local: LocalSkillsConfig = Field(default_factory=LocalSkillsConfig)


class InstructionsConfig(BaseModel):
    """Project instructions: ``<DSH_HOME>/AGENTS.md``, then one ``AGENTS.md`` (else
    ``CLAUDE.md``) per directory from the project's git root down to the session cwd, at most
    64 KiB in all, in the session prefix. ``enabled = false`` offers none."""

    model_config = _STRICT

    enabled: bool = True


class BashConfig(BaseModel):
    """The bash tool and its local executor: default and maximum timeouts (seconds), whether
    ``run_in_background`` is offered."""

    model_config = _STRICT

    timeout: float = Field(default=120.0, gt=0)
    max_timeout: float = Field(default=600.0, gt=0)
    background: bool = True


class TodoConfig(BaseModel):
    """The ``todo_write`` tool (dsh-tool-todo): the model's task list, logged as ``todo/write``.

    ``enabled``: ``true`` offers it to every agent, ``false`` to none; unset (the default), it is
    offered where the front end shows plans (``dsh acp``: the editor shows it as the ACP plan)
    and not in the terminal or ``dsh run``, where a list nobody sees would only cost every
    request its schema. ``allow_parallel_in_progress``: several tasks may be ``in_progress`` at
    once (dsh runs work in parallel: background jobs, ``session_create`` children); ``false``
    keeps the model to exactly one."""

    model_config = _STRICT

    enabled: bool | None = None
    allow_parallel_in_progress: bool = True

    def offered(self, *, shows_plans: bool) -> bool:
        """Whether agents get ``todo_write``: ``enabled`` when set, else ``shows_plans`` (the
        front end composing the harness shows the plan)."""
        return self.enabled if self.enabled is not None else shows_plans


class SandboxConfig(BaseModel):
    """Where model commands may write and whether the user is asked before widening that.

    ``mode`` (``read-only``, ``workspace-write``, ``danger-full-access``; default:
    ``$DSH_PERMISSION_MODE``, else ``workspace-write``) and ``approval`` (``ask`` or
    ``never``; default: ``never`` under ``danger-full-access``, else ``ask``) are pinned into
    each new session; a resumed session keeps its own. ``writable_roots`` are extra writable
    directories, ``deny_read`` the paths no confined command may read (default: the usual
    credential folders), ``network`` lets confined commands use the network, ``bwrap`` names
    the bubblewrap executable.
    """

    model_config = _STRICT

    mode: SandboxMode = "workspace-write"
    approval: ApprovalPolicy | None = None
    writable_roots: list[str] = Field(default_factory=list)
    deny_read: list[str] | None = None
    network: bool = False
    bwrap: str = Field(default="bwrap", min_length=1)

    @property
    def approval_policy(self) -> ApprovalPolicy:
        """The approval policy new sessions get (``approval``, else by ``mode``)."""
        if self.approval is not None:
            return self.approval
        return "never" if self.mode == "danger-full-access" else "ask"


class Config(BaseModel):
    """The resolved configuration (see the package README for the file format)."""

    model_config = _STRICT

    dsh_home: str | None = None
    model: str = "deepseek:deepseek-v4-flash"
    system: str | None = None
    """Replaces the built-in system prompt (not with ``system_file``)."""
    system_file: str | None = Field(default=None, min_length=1)
    """A UTF-8 file whose text replaces the built-in system prompt (a relative path is
    resolved against the config file's folder)."""
    append_system: str | None = None
    """Text added after the system prompt, whichever it is (built in, ``system``,
    ``system_file`` or a preset's)."""
    max_tokens: int | None = Field(default=None, gt=0)
    max_steps_per_turn: int | None = Field(default=None, gt=0)
    max_delegation_depth: int = Field(default=5, ge=0)
    """How deep ``session_create`` children may nest (a child of depth 5 creates none)."""
    persistence: PersistenceConfig = Field(default_factory=PersistenceConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    presets: dict[str, PresetConfig] = Field(default_factory=dict)
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    """``[models."provider:model"]``: per-model settings (``prices``)."""
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    instructions: InstructionsConfig = Field(default_factory=InstructionsConfig)
    """``[instructions]``: the ``AGENTS.md`` files offered in the session prefix."""
    bash: BashConfig = Field(default_factory=BashConfig)
    todo: TodoConfig = Field(default_factory=TodoConfig)
    """``[todo]``: the ``todo_write`` tool (off in the terminal, on under ``dsh acp``, unless
    ``enabled`` says otherwise)."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    """``[compaction]``: when and how sessions are compacted (``dsh_compaction``'s keys)."""
    hooks: HooksConfig | None = None
    """``[hooks]``: Claude Code or Codex command hooks (``dialect`` and the run options, then one
    array of tables per event, ``[[hooks.PreToolUse]]``, in that dialect's shape)."""
    mcp: McpSection = Field(default_factory=McpSection)
    """``[mcp.servers.NAME]``: MCP servers whose tools every agent gets (``dsh_tool_mcp``, the
    ``[mcp]`` extra)."""
    profile: str | None = None
    source: str | None = None
    """The config file this was read from (``None``: defaults only)."""
    _env: Mapping[str, str] | None = PrivateAttr(default=None)
    _system_file_text: str | None = PrivateAttr(default=None)

    @field_validator("model")
    @classmethod
    def _is_a_route(cls, route: str) -> str:
        split_route(route)
        return route

    @model_validator(mode="after")
    def _one_replacement(self) -> Config:
        if self.system is not None and self.system_file is not None:
            raise ConfigError("system_file", "is set beside system: set one of them")
        return self

    @model_validator(mode="after")
    def _bare_routes_name_a_provider(self) -> Config:
        # a route without its model must at least name a provider ("no-colon" is a typo)
        named = [("model", self.model)]
        named += [(f"presets.{n}.model", p.model) for n, p in self.presets.items() if p.model]
        for where, route in named:
            provider, model = split_route(route, where=where)
            if model is None and provider not in self.provider_names():
                raise ConfigError(
                    where,
                    f"{route!r} is neither provider:model nor a provider's name (providers: "
                    f"{', '.join(self.provider_names())})",
                )
        return self

    def system_file_path(self) -> Path | None:
        """``system_file`` as a path: a relative one is resolved against the config file's
        folder (the current directory when there is no file); ``None`` when not set.
        `load_config` resolves it so once, as it reads the file."""
        if self.system_file is None:
            return None
        return _beside_the_file(self.system_file, self.source)

    def _read_system_file(self) -> str | None:
        """The text of ``system_file`` (read once, then kept): a regular UTF-8 file of at most
        `MAX_SYSTEM_FILE_BYTES`; anything else is a :class:`ConfigError` naming the key and
        the file."""
        path = self.system_file_path()
        if path is None:
            return None
        if self._system_file_text is None:
            where = f"{self.source}: system_file" if self.source else "system_file"
            try:
                data = read_regular_file(path, MAX_SYSTEM_FILE_BYTES)
            except FileNotFoundError:
                raise ConfigError(where, f"{path} does not exist") from None
            except UnreadableFileError as error:
                raise ConfigError(where, f"{error.path} {error.problem}") from None
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ConfigError(
                    where, f"{path} is not UTF-8 ({error.reason} at byte {error.start})"
                ) from None
            if not text.strip():
                raise ConfigError(where, f"{path} is empty")
            self._system_file_text = text
        return self._system_file_text

    def system_prompt(self, preset: str | None = None) -> SystemPrompt:
        """The system prompt a new agent of ``preset`` (default: none) gets and where it came
        from: the preset's ``system``, else ``system``, else ``system_file``'s text, else the
        built-in prompt; ``append_system`` follows it after a blank line. Raises
        :class:`ConfigError` for an unreadable ``system_file``."""
        settings = self.presets.get(preset) if preset is not None else None
        text: str
        source: SystemPromptSource
        file_text = self._read_system_file()  # a bad file is an error whatever the preset
        if settings is not None and settings.system:
            text, source = settings.system, "preset"
        elif self.system is not None:
            text, source = self.system, "system"
        elif file_text is not None:
            text, source = file_text, "system_file"
        else:
            text, source = BUILTIN_SYSTEM_PROMPT, "built-in"
        if self.append_system:
            text = text.rstrip("\n") + "\n\n" + self.append_system
        return SystemPrompt(text=text, source=source, appended=bool(self.append_system))

    @field_validator("models")
    @classmethod
    def _keys_are_routes(cls, models: dict[str, ModelConfig]) -> dict[str, ModelConfig]:
        for route in models:
            parse_route(route, where=f"models.{route}")
        return models

    def model_facts(self, provider: str, model: str) -> ModelFacts:
        """What is known of ``model`` served by ``provider`` without asking its server: the
        window from ``[providers.NAME] context_windows``, else its ``context_window``, else the
        catalog of the provider's base URL; the output limit from that catalog; the prices from
        ``[models."provider:model"] prices``, else the catalog."""
        config = self.provider(provider)
        catalog = catalog_for(config.base_url) if config is not None else None
        listed = catalog.models.get(model) if catalog is not None else None
        facts: dict[str, Any] = {}
        if config is not None and model in config.context_windows:
            facts["context_window"] = config.context_windows[model]
            facts["context_window_from"] = f"providers.{provider}.context_windows"
        elif config is not None and config.context_window is not None:
            facts["context_window"] = config.context_window
            facts["context_window_from"] = f"providers.{provider}.context_window"
        elif listed is not None:
            facts["context_window"] = listed.context_window
            facts["context_window_from"] = "catalog"
        configured = self.models.get(f"{provider}:{model}")
        if configured is not None and configured.prices is not None:
            facts["prices"] = configured.prices
            facts["prices_from"] = f'models."{provider}:{model}".prices'
        elif listed is not None and listed.prices is not None:
            facts["prices"] = listed.prices
            facts["prices_from"] = "catalog"
        if listed is not None:
            facts |= {"max_output": listed.max_output, "note": listed.note}
            facts["checked"] = catalog.checked if catalog is not None else None
        return ModelFacts(**facts)

    def takes_images(self, provider: str, model: str) -> bool:
        """Whether ``[models."provider:model"] images = true`` says the model takes images."""
        configured = self.models.get(f"{provider}:{model}")
        return configured is not None and configured.images

    def known_models(self) -> list[tuple[str, str]]:
        """Every ``(provider, model)`` something is known of: the catalog's models of each
        provider served at a built-in base URL, each ``context_windows`` entry, each
        ``[models."provider:model"]`` table."""
        routes: dict[tuple[str, str], None] = {}
        for name in self.provider_names():
            config = self.provider(name)
            assert config is not None
            catalog = catalog_for(config.base_url)
            for model in catalog.models if catalog is not None else ():
                routes[(name, model)] = None
            for model in config.context_windows:
                routes[(name, model)] = None
        for route in self.models:
            routes[parse_route(route)] = None
        return list(routes)

    def provider(self, name: str) -> ProviderConfig | None:
        """The provider named ``name``: a built-in one with what the config sets for it laid
        over it (``[providers.deepseek] base_url = ...`` keeps ``DEEPSEEK_API_KEY``), else the
        configured one."""
        configured = self.providers.get(name)
        builtin = BUILTIN_PROVIDERS.get(name)
        if configured is None or builtin is None:
            return configured or builtin
        changes = {field: getattr(configured, field) for field in configured.model_fields_set}
        return builtin.model_copy(update=changes)

    def provider_names(self) -> list[str]:
        """Every provider this config can route to."""
        return sorted({*BUILTIN_PROVIDERS, *self.providers})

    def home(self) -> Path:
        """The DSH home: ``dsh_home`` here, else ``$DSH_HOME``, else ``~/.dsh`` (resolved once,
        through ``dsh-paths``)."""
        return resolve_dsh_home(self.dsh_home)

    def persistence_location(self) -> PersistenceLocation:
        """Where session logs go, resolved: the backend kind with its absolute root (JSONL) or
        database path (SQLite), the configured one or the default under the DSH home, or the
        DSN variable and schema (PostgreSQL). See `PersistenceConfig.location`."""
        return self.persistence.location(self.home())

    @field_validator("hooks", mode="before")
    @classmethod
    def _events_beside_the_options(cls, value: Any) -> Any:
        # [hooks] holds dialect and options, and each event's array of tables beside them
        # ([[hooks.Notification]] too: events dsh-hooks does not run are left out, named)
        if isinstance(value, dict) and "hooks" not in value:
            events = {k: v for k, v in value.items() if k in HOOK_EVENTS or isinstance(v, list)}
            value = {k: v for k, v in value.items() if k not in events} | {"hooks": events}
        return value

    def environment(self) -> Mapping[str, str]:
        """The environment this configuration was loaded from (``os.environ`` by default)."""
        return self._env if self._env is not None else os.environ

    def as_written(self) -> dict[str, Any]:
        """The configuration as a config file holds it: plain data that `load_config` reads
        back to an equal configuration (``source`` and ``profile`` aside: they say where one
        was read from, and are left out).

        Every key is in it with its value, defaults included, but for keys whose default
        depends on others: ``persistence.root`` and ``path`` and ``sandbox.approval`` stay
        unset when unset, and a provider holds only the keys configured for it (a built-in
        provider's others come from the built-in one). Secrets are never in it: a literal
        header value of a provider or an MCP server, and a literal ``env`` value of an MCP
        server, are left out (a ``{ env = "VAR" }`` reference is written), so the configuration
        read back lacks them; so are the hook events ``[hooks]`` left out (they never ran).
        `dump` shows what this leaves out or unset."""
        data = self.model_dump(mode="json", exclude={"profile", "source"})
        data["providers"] = {
            name: _provider_as_written(provider) for name, provider in self.providers.items()
        }
        data["mcp"] = self.mcp.as_written()
        if self.hooks is not None:
            data["hooks"] = _hooks_as_written(self.hooks)
        return data

    def dump(self) -> dict[str, Any]:
        """The configuration as plain data with every value filled in, for reading (``dsh
        config --dump``): the home, the persistence location, every provider with the keys of
        its kind, whether each API key variable is set, each known model's window and prices,
        the system prompt and its source. Secrets are never in it: a key's or DSN's value is
        shown as ``***`` when its variable is set, a literal header or MCP ``env`` value as
        ``***``. `as_written` is the part a config file holds."""
        data = self.model_dump(mode="json")
        home = self.home()
        data["dsh_home"] = str(home)
        persistence = data["persistence"]
        location = self.persistence.location(home)
        if location.backend == "jsonl":
            persistence["root"] = str(location.root)
        elif location.backend == "sqlite":
            persistence["path"] = str(location.path)
        environ = self.environment()
        providers: dict[str, Any] = {}
        for name in self.provider_names():
            provider = self.provider(name)
            assert provider is not None
            configured = self.providers.get(name)
            keys = _KIND_KEYS[provider.kind] | (
                configured.model_fields_set if configured is not None else set()
            )
            shown = providers[name] = provider.model_dump(mode="json", include=keys)
            if "headers" in shown:
                shown["headers"] = _masked(provider.headers)
            if provider.kind == "openai-compatible":
                variable = provider.api_key_env
                shown["api_key"] = (
                    None if variable is None else ("***" if environ.get(variable) else "(not set)")
                )
        if location.backend == "postgres":
            persistence["dsn"] = "***" if environ.get(location.dsn_env) else "(not set)"
        data["providers"] = providers
        data["models"] = {
            f"{provider}:{model}": _facts_as_written(self.model_facts(provider, model))
            for provider, model in self.known_models()
        }
        data["mcp"] = self.mcp.dump()
        data["sandbox"]["approval"] = self.sandbox.approval_policy
        prompt = self.system_prompt()
        data["system_prompt"] = {
            "source": prompt.source,
            "appended": prompt.appended,
            "tokens": estimate_content([{"type": "text", "text": prompt.text}]),
            "text": prompt.text,
        }
        if self.system_file is not None:
            data["system_file"] = str(self.system_file_path())
        for name, preset in data["presets"].items():
            preset["system_source"] = self.system_prompt(name).source
        if self.hooks is not None:
            data["hooks"] = _hooks_as_written(self.hooks) | {"ignored": list(self.hooks.ignored)}
        return data


_KIND_KEYS: dict[str, set[str]] = {
    "openai-compatible": set(ProviderConfig.model_fields) - {"replies"},
    "scripted": {"kind", "replies", "context_window", "context_windows"},
}
"""The provider keys each kind uses (a key configured for a provider is shown whatever its
kind)."""


def _masked(headers: Mapping[str, str | EnvRef]) -> dict[str, Any]:
    """Headers for reading: a variable's name as written, a literal value as ``***``."""
    return {
        name: {"env": value.env} if isinstance(value, EnvRef) else "***"
        for name, value in headers.items()
    }


def _provider_as_written(provider: ProviderConfig) -> dict[str, Any]:
    """A configured provider's own keys, without literal header values (they may be secrets)."""
    written = provider.model_dump(mode="json", exclude_unset=True)
    if "headers" in written:
        written["headers"] = {
            name: {"env": value.env}
            for name, value in provider.headers.items()
            if isinstance(value, EnvRef)
        }
    return written


def _facts_as_written(facts: ModelFacts) -> dict[str, Any]:
    """A model's facts for a dump: its window, output limit and prices, and in ``source``
    where they came from, in one line."""
    prices = facts.prices
    written: dict[str, Any] = {
        "context_window": facts.context_window,
        "max_output": facts.max_output,
        "prices": None
        if prices is None
        else f"input {prices.input:g}, cached_input "
        + ("?" if prices.cached_input is None else f"{prices.cached_input:g}")
        + f", output {prices.output:g} (USD per 1M tokens)",
    }
    sources = [
        f"window: {facts.context_window_from}" if facts.context_window_from else "",
        f"prices: {facts.prices_from}" if facts.prices_from else "",
        f"catalog of {facts.checked}" if facts.checked else "",
        facts.note or "",
    ]
    written["source"] = "; ".join(part for part in sources if part) or None
    return written


def _hooks_as_written(hooks: HooksConfig) -> dict[str, Any]:
    """``[hooks]`` in the shape it is written in: the options, then each configured event's
    matcher groups under the event's own name."""
    written: dict[str, Any] = hooks.model_dump(mode="json", exclude={"hooks"})
    for event in HOOK_EVENTS:
        groups = hooks.hooks.groups(event)
        if groups:
            written[event] = [
                group.model_dump(mode="json", by_alias=True, exclude_none=True) for group in groups
            ]
    return written


def _beside_the_file(path: str, source: str | None) -> Path:
    """``path`` with ``~`` expanded, a relative one resolved against the folder of the config
    file ``source`` (the current directory when there is none)."""
    found = Path(os.path.expanduser(path))
    if not found.is_absolute():
        base = Path(source).parent if source is not None else Path.cwd()
        found = Path(os.path.abspath(base / found))
    return found


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_toml(path: Path) -> dict[str, Any]:
    """The TOML table of the config file at ``path`` (``{}`` when there is none): a regular
    file of at most `MAX_CONFIG_BYTES`, never a FIFO or a device (see ``_files``)."""
    try:
        data = read_regular_file(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        if os.path.lexists(path):  # a link to nothing is a mistake, not "no config"
            raise UnreadableFileError(path, "is a symbolic link to a missing file") from None
        return {}
    try:
        return tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(str(path), f"is not valid TOML ({error})") from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            str(path), f"is not UTF-8 ({error.reason} at byte {error.start})"
        ) from None


def _validation_error(source: str, error: ValidationError) -> ConfigError:
    first = error.errors(include_url=False, include_input=False)[0]
    key = ".".join(str(part) for part in first["loc"]) or "(top level)"
    message = first["msg"].removeprefix("Value error, ")  # a validator's own sentence
    return ConfigError(f"{source}: {key}", message)


def load_config(
    profile: str | None = None,
    *,
    dsh_home: str | os.PathLike[str] | None = None,
    path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Read the configuration.

    The file is ``path``, else ``$DSH_CONFIG``, else ``<home>/config.toml`` (home: ``dsh_home``,
    else ``$DSH_HOME``, else ``~/.dsh``); a missing file means the defaults. ``profile`` (else
    ``$DSH_PROFILE``) merges ``[profiles.NAME]`` over the top level; ``$DSH_MODEL`` then
    overrides ``model`` and ``$DSH_PERMISSION_MODE`` ``sandbox.mode``; ``overrides`` (for
    example from command-line options) come last.
    Raises :class:`ConfigError` naming the file and key for anything invalid, and for a profile
    the file does not define.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    home = resolve_dsh_home(dsh_home, env)
    chosen = path if path is not None else environ.get("DSH_CONFIG") or None
    file = Path(chosen) if chosen is not None else home / CONFIG_FILE_NAME
    raw = _read_toml(file)
    source = str(file) if raw or file.exists() else "defaults"
    profiles = raw.pop("profiles", {})
    if not isinstance(profiles, dict):
        raise ConfigError(f"{source}: profiles", "must be a table of [profiles.NAME] tables")
    profile = profile if profile is not None else (environ.get("DSH_PROFILE") or None)
    data = raw
    if profile is not None:
        chosen_profile = profiles.get(profile)
        if not isinstance(chosen_profile, dict):
            known = ", ".join(sorted(profiles)) or "none"
            raise ConfigError(
                f"{source}: profiles.{profile}", f"no such profile (defined: {known})"
            )
        data = _merge(data, chosen_profile)
    if environ.get("DSH_MODEL"):
        split_route(environ["DSH_MODEL"], where="$DSH_MODEL")  # name the variable, not the file
        data["model"] = environ["DSH_MODEL"]
    mode = environ.get("DSH_PERMISSION_MODE")
    if mode:
        if mode not in SANDBOX_MODES:
            raise ConfigError(
                "$DSH_PERMISSION_MODE", f"{mode!r} is not one of {', '.join(SANDBOX_MODES)}"
            )
        sandbox = data.get("sandbox")
        data["sandbox"] = {**(sandbox if isinstance(sandbox, dict) else {}), "mode": mode}
    if overrides:
        data = _merge(data, overrides)
    # the home is resolved once, here: a home the file names wins over the one that found it
    named = data.get("dsh_home")
    if isinstance(named, str) and named:
        try:
            data["dsh_home"] = str(resolve_dsh_home(named, env))
        except DshHomeError as error:
            raise ConfigError(f"{source}: dsh_home", str(error)) from None
    elif named is None:
        data["dsh_home"] = str(home)
    data["profile"] = profile
    data["source"] = None if source == "defaults" else source
    # and system_file, against the file's folder: a dump of this config names the same file
    system_file = data.get("system_file")
    if isinstance(system_file, str) and system_file:
        data["system_file"] = str(_beside_the_file(system_file, data["source"]))
    try:
        config = Config.model_validate(data)
        config._env = environ  # the dump says whether keys are set in this environment
    except ValidationError as error:
        raise _validation_error(source, error) from None
    except ConfigError as error:
        if error.key == "model" and data.get("model") == environ.get("DSH_MODEL"):
            raise ConfigError("$DSH_MODEL", error.reason) from None  # the variable said it
        raise ConfigError(f"{source}: {error.key}", error.reason) from None
    config._read_system_file()  # a bad system_file is refused now, naming the file and key
    return config
