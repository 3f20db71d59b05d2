"""The parts that come with an extra of dsh-agent-core, and what happens without it.

``pip install dsh-agent-core`` brings the local parts only; ``[postgres]`` adds the PostgreSQL
backend (dsh-persistence-postgres: psycopg and its pool) and ``[mcp]`` the MCP servers' tools
(dsh-tool-mcp: the MCP SDK and its HTTP server stack), ``[acp]`` the editors' agent ``dsh acp``
(dsh-acp: the Agent Client Protocol SDK); ``[all]`` every one. A configuration that asks
for a part whose extra is not installed is refused with `MissingExtraError`, one line naming
the extra; one that does not ask never imports it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dsh_agent_core._errors import ConfigError, MissingExtraError

if TYPE_CHECKING:
    from dsh_tool_mcp import McpConfig, McpServerStatus
    from dsh_tools import ToolDefinition

__all__ = [
    "EXTRA_MODULES",
    "Extra",
    "McpSection",
    "McpServerSet",
    "NoMcpServers",
    "extra_installed",
    "mcp_servers",
    "mcp_tools",
    "require_extra",
]

_log = logging.getLogger("dsh_agent_core")

Extra = Literal["postgres", "mcp", "acp"]
"""An extra of dsh-agent-core that brings a part a configuration may ask for."""

EXTRA_MODULES: Mapping[Extra, str] = {
    "postgres": "dsh_persistence_postgres",
    "mcp": "dsh_tool_mcp",
    "acp": "dsh_acp",
}
"""The import name of the distribution each extra brings."""


def extra_installed(extra: Extra) -> bool:
    """Whether the distribution ``extra`` brings is installed (found, not imported)."""
    module = EXTRA_MODULES[extra]
    if module in sys.modules:
        return sys.modules[module] is not None
    return importlib.util.find_spec(module) is not None


def require_extra(extra: Extra, part: str) -> None:
    """Raise `MissingExtraError` naming ``part`` (what the configuration asks for) and
    ``extra`` unless that extra is installed."""
    if not extra_installed(extra):
        raise MissingExtraError(part, extra)


class McpSection(BaseModel):
    """``[mcp]``: the MCP servers whose tools every agent gets, one ``[mcp.servers.NAME]``
    table each (the keys are dsh-tool-mcp's ``McpConfig``).

    With the ``[mcp]`` extra the tables are validated as the configuration loads (a mistake is
    a `ConfigError` naming the server and the key); without it they are kept as written, and
    `mcp_servers` refuses them with `MissingExtraError`, so a configuration with servers still
    loads (``dsh sessions list`` works) but builds no harness.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The servers' tables by name, as written."""

    @model_validator(mode="before")
    @classmethod
    def _checked_by_the_extra(cls, data: Any) -> Any:
        if extra_installed("mcp") and not isinstance(data, McpSection):
            _validated(data)
        return data

    def require_extra(self) -> None:
        """Raise `MissingExtraError` naming the first server when servers are configured and
        the ``[mcp]`` extra is not installed."""
        if self.servers:
            require_extra("mcp", f'MCP server "{next(iter(self.servers))}"')

    def config(self) -> McpConfig:
        """The servers as dsh-tool-mcp's ``McpConfig`` (see `require_extra`)."""
        self.require_extra()
        return _validated({"servers": self.servers})

    def as_written(self) -> dict[str, Any]:
        """``[mcp]`` as a config file holds it: each server's table as written, without the
        literal ``env`` and ``headers`` values (they may be tokens; a ``{ env = "NAME" }``
        reference stays)."""
        tables = {name: dict(table) for name, table in self.servers.items()}
        return {"servers": _without_literal_secrets(tables, mask=None)}

    def dump(self) -> dict[str, Any]:
        """``[mcp]`` for a dump: each server with its defaults filled in (when the extra is
        installed), a value read from a variable shown as the variable's name and a literal
        ``env`` or ``headers`` value as ``***`` (it may be a token)."""
        if self.servers and extra_installed("mcp"):
            tables = {
                name: server.model_dump(mode="json")
                for name, server in self.config().servers.items()
            }
        else:
            tables = {name: dict(table) for name, table in self.servers.items()}
        return {"servers": _without_literal_secrets(tables, mask="***")}


def _validated(data: Any) -> McpConfig:
    from dsh_tool_mcp import McpConfig, McpConfigError

    try:
        return McpConfig.model_validate(data)
    except McpConfigError as error:
        where = ".".join(part for part in ("mcp.servers", error.server, error.key) if part)
        raise ConfigError(where, error.problem) from None


class McpServerSet(Protocol):
    """What the harness uses of its MCP servers: dsh-tool-mcp's ``McpServers``, or
    `NoMcpServers` when none is configured and the ``[mcp]`` extra is not installed."""

    def status(self) -> list[McpServerStatus]:
        """Each server's ``{name, state, error?, tools}``."""
        ...

    def tools(self) -> Sequence[ToolDefinition[Any]]:
        """The servers' tools; may raise dsh-tool-mcp's ``McpToolNameError``."""
        ...

    async def start(self) -> None:
        """Start every server and list its tools."""
        ...

    async def aclose(self) -> None:
        """Stop every server."""
        ...


class NoMcpServers:
    """No MCP server: what a harness holds when none is configured and the ``[mcp]`` extra
    is not installed."""

    def status(self) -> list[McpServerStatus]:
        """No server, no status."""
        return []

    def tools(self) -> Sequence[ToolDefinition[Any]]:
        """No server, no tools."""
        return []

    async def start(self) -> None:
        """Nothing to start."""

    async def aclose(self) -> None:
        """Nothing to stop."""


def mcp_servers(
    section: McpSection,
    *,
    environ: Mapping[str, str] | None,
    log_file: str | os.PathLike[str],
) -> McpServerSet:
    """The servers ``section`` configures (dsh-tool-mcp's ``McpServers``, reading
    ``{env = "NAME"}`` values from ``environ``, default ``os.environ``, and writing their
    stderr to ``log_file``); `NoMcpServers` when there is none and the ``[mcp]`` extra is not
    installed; `MissingExtraError` when there are some and it is not."""
    if not section.servers and not extra_installed("mcp"):
        return NoMcpServers()
    config = section.config()
    from dsh_tool_mcp import McpServers

    return McpServers(config, environ=environ, log_file=log_file)


def mcp_tools(servers: McpServerSet) -> list[ToolDefinition[Any]]:
    """The tools ``servers`` offer, or none (logged) when their names clash or run too long:
    never a crash, the agents run without them."""
    if isinstance(servers, NoMcpServers):
        return []
    from dsh_tool_mcp import McpToolNameError

    try:
        return list(servers.tools())
    except McpToolNameError as error:
        _log.warning("MCP tools are not offered: %s", error)
        return []


def _without_literal_secrets(
    tables: dict[str, dict[str, Any]], *, mask: str | None
) -> dict[str, dict[str, Any]]:
    """``tables`` (changed in place) with each server's ``env`` and ``headers`` values kept
    only as ``{ env = "NAME" }`` references: a literal value (it may be a token) is left out
    (``mask`` None) or shown as ``mask``."""
    for table in tables.values():
        for key in ("env", "headers"):
            values = table.get(key)
            if not isinstance(values, Mapping):
                continue
            kept: dict[str, Any] = {}
            for name, value in values.items():
                if isinstance(value, Mapping) and "env" in value:
                    kept[name] = {"env": value["env"]}
                elif mask is not None:
                    kept[name] = mask
            table[key] = kept
    return tables
