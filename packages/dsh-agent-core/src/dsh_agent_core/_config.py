"""The one configuration: TOML at ``<DSH_HOME>/config.toml``, named profiles, environment
overrides, and defaults that work with no file at all. `Config` is the whole of it; its tables
are in ``_provider_config`` (providers and models) and ``_config_sections`` (the rest), and it
is read by ``_config_load.load_config``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from dsh_agent_core._catalog import catalog_for
from dsh_agent_core._config_sections import (
    BashConfig,
    InstructionsConfig,
    PresetConfig,
    SandboxConfig,
    SkillsConfig,
    SystemPrompt,
    TodoConfig,
)
from dsh_agent_core._errors import ConfigError
from dsh_agent_core._extras import McpSection
from dsh_agent_core._files import UnreadableFileError, read_regular_file
from dsh_agent_core._persistence_config import PersistenceConfig, PersistenceLocation
from dsh_agent_core._provider_config import (
    BUILTIN_PROVIDERS,
    STRICT,
    EnvRef,
    ModelConfig,
    ModelFacts,
    ProviderConfig,
    parse_route,
    split_route,
)
from dsh_agent_core._system_prompt import BUILTIN_SYSTEM_PROMPT, SystemPromptSource
from dsh_compaction import CompactionConfig, estimate_content
from dsh_hooks import HOOK_EVENTS, HooksConfig
from dsh_paths import resolve_dsh_home

__all__ = [
    "CONFIG_FILE_NAME",
    "MAX_SYSTEM_FILE_BYTES",
    "Config",
    "beside_the_file",
]

CONFIG_FILE_NAME = "config.toml"
"""The config file's name inside the DSH home."""

MAX_SYSTEM_FILE_BYTES = 256 * 1024
"""The largest ``system_file`` read (256 KiB)."""


class Config(BaseModel):
    """The resolved configuration (see the package README for the file format)."""

    model_config = STRICT

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
        return beside_the_file(self.system_file, self.source)

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


def beside_the_file(path: str, source: str | None) -> Path:
    """``path`` with ``~`` expanded, a relative one resolved against the folder of the config
    file ``source`` (the current directory when there is none)."""
    found = Path(os.path.expanduser(path))
    if not found.is_absolute():
        base = Path(source).parent if source is not None else Path.cwd()
        found = Path(os.path.abspath(base / found))
    return found
