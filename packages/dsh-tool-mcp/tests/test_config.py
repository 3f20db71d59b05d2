"""Configuration as data: typed errors naming server and key, and secrets kept out of it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_tool_mcp import (
    EnvRef,
    HttpServer,
    McpConfig,
    McpConfigError,
    McpServers,
    StdioServer,
    mcp_tool_name,
)


def test_a_table_with_command_is_stdio_and_one_with_url_is_http() -> None:
    config = McpConfig.model_validate(
        {
            "servers": {
                "files": {"command": "fs-server", "args": ["--root", "/srv"], "cwd": "/srv"},
                "github": {
                    "url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": {"env": "GH_AUTH"}, "X-Team": "core"},
                    "timeout": 5,
                },
            }
        }
    )
    files, github = config.servers["files"], config.servers["github"]
    assert isinstance(files, StdioServer)
    assert (files.command, files.args, files.env, files.timeout) == (
        "fs-server",
        ["--root", "/srv"],
        {},
        60.0,
    )
    assert isinstance(github, HttpServer)
    assert github.headers == {"Authorization": EnvRef(env="GH_AUTH"), "X-Team": "core"}
    assert (github.timeout, github.startup_timeout) == (5.0, 60.0)


BAD: list[tuple[dict[str, Any], str | None, str | None, str]] = [
    ({"s": {"command": "x", "bogus": 1}}, "s", "bogus", "unknown key"),
    ({"s": {"command": "x", "url": "http://h/mcp"}}, "s", "url", "not both"),
    ({"s": {"args": ["a"]}}, "s", None, "needs 'command'"),
    ({"s": "run-me"}, "s", None, "must be a table"),
    ({"s": {"command": ""}}, "s", "command", "at least 1 character"),
    ({"s": {"command": "x", "args": "--flag"}}, "s", "args", "valid list"),
    ({"s": {"command": "x", "args": ["ok", 3]}}, "s", "args[1]", "valid string"),
    ({"s": {"command": "x", "env": {"TOKEN": 3}}}, "s", "env.TOKEN", "{env ="),
    ({"s": {"command": "x", "env": {"T": {"env": "A", "x": 1}}}}, "s", "env.T", "{env ="),
    ({"s": {"url": "http://h/mcp", "headers": {"A": {"var": "X"}}}}, "s", "headers.A", "{env ="),
    ({"s": {"url": "ftp://h/mcp"}}, "s", "url", "http:// or https://"),
    ({"s": {"command": "x", "timeout": 0}}, "s", "timeout", "greater than 0"),
    ({"s": {"command": "x", "timeout": True}}, "s", "timeout", "valid number"),
    ({"s": {"command": "x", "timeout": "5"}}, "s", "timeout", "valid number"),
    ({"s": {"command": "x", "startup_timeout": -1}}, "s", "startup_timeout", "greater than 0"),
    ({"a.b": {"command": "x"}, "a_b": {"command": "y"}}, "a_b", None, "share the prefix"),
]


@pytest.mark.parametrize(("servers", "server", "key", "fragment"), BAD)
def test_bad_config_is_a_typed_error_naming_server_and_key(
    servers: dict[str, Any], server: str | None, key: str | None, fragment: str
) -> None:
    with pytest.raises(McpConfigError) as caught:
        McpServers({"servers": servers})
    error = caught.value
    assert (error.server, error.key) == (server, key), str(error)
    assert fragment in error.problem, str(error)
    assert f"MCP server {server!r}" in str(error)
    if key is not None:
        assert f"key {key!r}" in str(error)


def test_the_top_level_refuses_unknown_keys_and_non_tables() -> None:
    with pytest.raises(McpConfigError) as caught:
        McpConfig.model_validate({"servers": {}, "sevrers": {}})
    assert (caught.value.server, caught.value.key) == (None, "sevrers")
    with pytest.raises(McpConfigError) as caught:
        McpConfig.model_validate({"servers": ["a"]})
    assert caught.value.key == "servers"


def test_an_env_reference_names_a_variable_and_never_its_value() -> None:
    with pytest.raises(McpConfigError) as caught:
        McpConfig.model_validate({"servers": {"s": {"command": "x", "env": {"T": {"env": "1X"}}}}})
    assert caught.value.key == "env.T"
    config = McpConfig.model_validate(
        {"servers": {"s": {"command": "x", "env": {"TOKEN": {"env": "MY_TOKEN"}}}}}
    )
    assert "MY_TOKEN" in config.model_dump_json()  # the reference, not a value


@given(st.text(min_size=1, max_size=20), st.text(min_size=1, max_size=20))
def test_tool_names_only_use_the_allowed_characters(server: str, tool: str) -> None:
    name = mcp_tool_name(server, tool)
    assert re.fullmatch(r"mcp__[A-Za-z0-9_-]+__[A-Za-z0-9_-]+", name)
    assert len(name) == len("mcp____") + len(server) + len(tool)


def test_tool_names_keep_allowed_characters_and_replace_the_rest() -> None:
    assert mcp_tool_name("git-hub", "list_issues") == "mcp__git-hub__list_issues"
    assert mcp_tool_name("my server", "get.item/v2") == "mcp__my_server__get_item_v2"
