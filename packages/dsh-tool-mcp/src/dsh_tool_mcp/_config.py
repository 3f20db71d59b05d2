"""The servers as data: ``McpConfig`` of stdio (``StdioServer``) and HTTP (``HttpServer``) servers.

Secrets stay out of the configuration: a header or environment value may be ``{env = "NAME"}``
(``EnvRef``), which names an environment variable read when the server starts. The resolved
value is handed to the transport and kept nowhere else (not in the config, its repr, its dump,
``McpServers.status()`` or a log line).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from dsh_tool_mcp._errors import McpConfigError
from dsh_tool_mcp._names import server_prefix

__all__ = [
    "ConfigValue",
    "EnvRef",
    "HttpServer",
    "McpConfig",
    "ServerConfig",
    "StdioServer",
    "resolve_values",
]

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


class EnvRef(BaseModel):
    """A value read from the environment variable ``env`` when the server starts.

    In TOML ``Authorization = { env = "GITHUB_AUTH" }``; in JSON ``{"env": "GITHUB_AUTH"}``.
    The variable must be set (a missing one fails that server's start with an
    ``McpConfigError`` naming server, key and variable); its value is used verbatim, so put the
    whole header value (``Bearer …``) in the variable.
    """

    model_config = _STRICT

    env: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The environment variable's name."""


ConfigValue = str | EnvRef
"""A header or environment value: a literal string, or ``EnvRef`` for a secret."""


class _Server(BaseModel):
    model_config = _STRICT

    timeout: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    """Seconds one tool call may take before it is abandoned (the server is told to cancel it)
    and answered with an ``MCP_TIMEOUT`` error result."""
    startup_timeout: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    """Seconds the ``initialize`` handshake and each ``tools/list`` page may take at start."""


class StdioServer(_Server):
    """A server run as a subprocess speaking MCP over its stdin/stdout.

    ``command`` and ``args`` are run without a shell; ``env`` is added to the SDK's minimal
    inherited environment (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER`` on
    POSIX), so anything else the server needs must be listed; ``cwd`` defaults to the
    current directory.
    """

    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, ConfigValue] = Field(default_factory=dict)
    cwd: str | None = None


class HttpServer(_Server):
    """A server reached over streamable HTTP at ``url`` (``http://`` or ``https://``), with
    ``headers`` sent on every request."""

    url: str
    headers: dict[str, ConfigValue] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")) or len(url) <= len("https://"):
            raise ValueError("must be an http:// or https:// URL")
        return url


ServerConfig = StdioServer | HttpServer
"""One server: ``command`` makes it a ``StdioServer``, ``url`` an ``HttpServer``."""


class McpConfig(BaseModel):
    """The MCP servers to run, by name (``[mcp.servers.<name>]`` tables in TOML).

    Validating a mapping picks ``StdioServer`` for a table with ``command`` and ``HttpServer``
    for one with ``url``; unknown keys, wrong types and other mistakes raise
    ``McpConfigError`` naming the server and the key (not pydantic's ``ValidationError``).
    Server names are free text, but two names that give the same ``mcp__<server>__`` prefix
    are refused.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: dict[str, ServerConfig] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _typed_servers(cls, data: Any) -> Any:
        if isinstance(data, McpConfig):
            return data
        if not isinstance(data, Mapping):
            raise McpConfigError(None, None, f"must be a table, not {type(data).__name__}")
        unknown = sorted(str(key) for key in data if key != "servers")
        if unknown:
            raise McpConfigError(None, unknown[0], "unknown key (only 'servers' is allowed)")
        servers = data.get("servers", {})
        if not isinstance(servers, Mapping):
            raise McpConfigError(None, "servers", "must be a table of servers by name")
        typed: dict[str, ServerConfig] = {}
        prefixes: dict[str, str] = {}
        for name, table in servers.items():
            if not isinstance(name, str) or not name:
                raise McpConfigError(
                    None, "servers", f"server name {name!r} is not a non-empty string"
                )
            prefix = server_prefix(name)
            if prefix in prefixes:
                raise McpConfigError(
                    name,
                    None,
                    f"its tools would share the prefix {prefix!r} with server "
                    f"{prefixes[prefix]!r}; rename one of them",
                )
            prefixes[prefix] = name
            typed[name] = _server(name, table)
        return {"servers": typed}


def _server(name: str, table: Any) -> ServerConfig:
    if isinstance(table, StdioServer | HttpServer):
        return table
    if not isinstance(table, Mapping):
        raise McpConfigError(name, None, f"must be a table, not {type(table).__name__}")
    has_command, has_url = "command" in table, "url" in table
    if has_command and has_url:
        raise McpConfigError(
            name,
            "url",
            "a server has either 'command' (stdio) or 'url' (streamable HTTP), not both",
        )
    if not has_command and not has_url:
        raise McpConfigError(
            name, None, "needs 'command' (a stdio server) or 'url' (a streamable HTTP server)"
        )
    model: type[StdioServer] | type[HttpServer] = StdioServer if has_command else HttpServer
    try:
        return model.model_validate(dict(table))
    except ValidationError as error:
        raise _config_error(name, error) from None


_MAPPING_FIELDS = frozenset({"env", "headers"})


def _config_error(server: str, error: ValidationError) -> McpConfigError:
    first = error.errors(include_url=False, include_input=False)[0]
    loc = first["loc"]
    key: str | None
    if loc and loc[0] in _MAPPING_FIELDS and len(loc) >= 2:
        key = f"{loc[0]}.{loc[1]}"
        if len(loc) >= 3 and first["type"] != "extra_forbidden":
            return McpConfigError(server, key, 'must be a string or {env = "VARIABLE_NAME"}')
    elif loc and loc[0] == "args" and len(loc) >= 2:
        key = f"args[{loc[1]}]"
    else:
        key = str(loc[0]) if loc else None
    problem = str(first["msg"])
    if first["type"] == "extra_forbidden":
        problem = "unknown key"
    return McpConfigError(server, key, problem[:1].lower() + problem[1:])


def resolve_values(
    server: str, field: str, values: Mapping[str, ConfigValue], environ: Mapping[str, str]
) -> dict[str, str]:
    """``values`` with each ``EnvRef`` replaced by its variable's value from ``environ``.

    Raises ``McpConfigError(server, "<field>.<key>", ...)`` naming the missing variable.
    """
    resolved: dict[str, str] = {}
    for key, value in values.items():
        if isinstance(value, EnvRef):
            if value.env not in environ:
                raise McpConfigError(
                    server, f"{field}.{key}", f"environment variable {value.env!r} is not set"
                )
            resolved[key] = environ[value.env]
        else:
            resolved[key] = value
    return resolved
