"""MCP servers as composed (issue 23 §3): [mcp.servers.NAME] validated and named, started with
the harness, their tools offered as mcp__<server>__<tool>, a failing server reported by name
while the agent keeps running, secrets never in the dump, servers closed on aclose."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dsh_agent_core import (
    Config,
    ConfigError,
    DshError,
    McpServerNameError,
    McpServerTableError,
    compose,
    load_config,
)
from dsh_agent_core.cli import cli
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from shapes import flat

SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("adder", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b


server.run()
"""


def configured(home: Path, text: str, env: dict[str, str] | None = None) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home), **(env or {})})


def server_table(tmp_path: Path, name: str = "adder") -> str:
    script = tmp_path / "adder_server.py"
    script.write_text(SERVER)
    return (
        f"[mcp.servers.{name}]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(script))}]\n"
    )


def results(agent: Any) -> list[dict[str, Any]]:
    return [
        flat("tool/result", e.to_wire()["data"])
        for e in agent.session.events
        if e.type == "tool/result"
    ]


async def test_a_configured_servers_tools_reach_the_agent(tmp_path: Path) -> None:
    text = server_table(tmp_path) + '[mcp.servers.broken]\ncommand = "/nonexistent/server"\n'
    model = ScriptedModel(
        [tool_call_response(("c1", "mcp__adder__add", {"a": 2, "b": 40})), text_response("42")]
    )
    config = configured(tmp_path / "home", text)
    async with compose(config, models={"scripted": model}) as harness:
        states = {s.name: s for s in harness.mcp.status()}
        assert states["adder"].state == "running"
        assert states["adder"].tools == ["add"]
        assert states["broken"].state == "failed"
        assert states["broken"].error
        assert "mcp__adder__add" in harness.tool_names()
        agent = await harness.create("add them", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        (result,) = results(agent)
        schema = next(s for s in model.requests[0].tools if s.name == "mcp__adder__add")
    assert result["content"] == [{"type": "text", "text": "42"}]
    assert not result["isError"]
    assert schema.parameters["required"] == ["a", "b"]  # the server's own schema
    assert {s.name: s.state for s in harness.mcp.status()}["adder"] == "closed"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[mcp.servers.x]\ncommand = "a"\nurl = "http://h"\n', "mcp.servers.x.url"),
        ('[mcp.servers.x]\ncommand = "a"\ncolour = "red"\n', "mcp.servers.x.colour"),
        ("[mcp.servers.x]\n", "mcp.servers.x"),
        ("[mcp]\nserver = {}\n", "mcp.server"),
    ],
)
def test_a_bad_server_table_is_a_config_error_naming_it(
    tmp_path: Path, text: str, key: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        configured(tmp_path / "home", text)
    assert f"config.toml: {key}" in str(caught.value)


def test_the_dump_shows_variable_names_never_values(tmp_path: Path) -> None:
    text = (
        '[mcp.servers.remote]\nurl = "http://127.0.0.1:1/mcp"\n'
        'headers = { Authorization = { env = "MCP_TOKEN" }, X-Team = "literal-secret" }\n'
    )
    home = tmp_path / "home"
    configured(home, text)
    runner = CliRunner()
    env = {"DSH_HOME": str(home), "MCP_TOKEN": "Bearer very-secret"}
    done = runner.invoke(cli, ["config", "--dump", "--json"], env=env)
    assert done.exit_code == 0, done.output
    headers = json.loads(done.output)["mcp"]["servers"]["remote"]["headers"]
    assert headers == {"Authorization": {"env": "MCP_TOKEN"}, "X-Team": "***"}
    assert "very-secret" not in done.output
    assert "literal-secret" not in done.output


def test_dsh_env_shows_each_servers_state_and_tools(tmp_path: Path) -> None:
    home = tmp_path / "home"
    configured(home, server_table(tmp_path) + '[mcp.servers.broken]\ncommand = "/nonexistent/x"\n')
    done = CliRunner().invoke(cli, ["env"], env={"DSH_HOME": str(home)})
    assert done.exit_code == 0, done.output
    assert "mcp server adder: running (add)" in done.output
    assert "mcp server broken: failed: " in done.output


SPAWNER = """
import subprocess
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("spawner", log_level="WARNING")


@server.tool()
def spawn() -> int:
    \"\"\"Start a long sleep in the background; answer with its pid.\"\"\"
    print("spawning a sleeper", file=sys.stderr, flush=True)
    return subprocess.Popen(["sleep", "1000"], stdout=subprocess.DEVNULL).pid


server.run()
"""


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def test_closing_the_harness_kills_a_servers_children_and_its_stderr_is_logged(
    tmp_path: Path,
) -> None:
    script = tmp_path / "spawner_server.py"
    script.write_text(SPAWNER)
    text = (
        f"[mcp.servers.spawner]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(script))}]\n"
    )
    model = ScriptedModel(
        [tool_call_response(("c1", "mcp__spawner__spawn", {})), text_response("ok")]
    )
    home = tmp_path / "home"
    config = configured(home, text)
    async with compose(config, models={"scripted": model}) as harness:
        agent = await harness.create("spawn", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        (result,) = results(agent)
        child = int(result["content"][0]["text"])
        assert _running(child)
    # dsh's own close path: the server's whole process group is gone, not just the server
    for _ in range(1500):  # a bounded wait (30 s) for the child's end
        if not _running(child):
            break
        await asyncio.sleep(0.02)
    assert not _running(child)
    log = (home / "logs" / "mcp-servers.log").read_text()
    assert "[spawner] spawning a sleeper\n" in log


# -- MCP servers one session brings (issue 37: an editor's, through dsh acp) ---------------


async def test_a_sessions_own_server_serves_that_session_alone(tmp_path: Path) -> None:
    script = tmp_path / "adder_server.py"
    script.write_text(SERVER)
    model = ScriptedModel(
        [tool_call_response(("c1", "mcp__mine__add", {"a": 1, "b": 2})), text_response("3"),
         text_response("none")]
    )  # fmt: skip
    config = configured(tmp_path / "home", "")
    async with compose(config, models={"scripted": model}) as harness:
        servers = harness.session_mcp_servers(
            {"mine": {"command": sys.executable, "args": [str(script)]}}
        )
        await servers.start()
        try:
            assert servers.failures() == []
            own = await harness.create(
                "add", model="scripted:m", cwd=tmp_path, tools=servers.tools()
            )
            await own.wait_idle()
            other = await harness.create("hi", model="scripted:m", cwd=tmp_path)
            await other.wait_idle()
            assert harness.get(own.id) is own
            assert "mcp__mine__add" not in harness.tool_names()
        finally:
            await servers.aclose()
    (result,) = results(own)
    assert result["content"] == [{"type": "text", "text": "3"}]
    assert "mcp__mine__add" in {s.name for s in model.requests[0].tools}
    assert "mcp__mine__add" not in {s.name for s in model.requests[-1].tools}


async def test_a_sessions_server_named_like_a_configured_one_is_refused(tmp_path: Path) -> None:
    config = configured(tmp_path / "home", server_table(tmp_path, "my_adder"))
    async with compose(config, models={"scripted": ScriptedModel([])}) as harness:
        with pytest.raises(McpServerNameError) as same:
            harness.session_mcp_servers({"my_adder": {"command": "/bin/true"}})
        with pytest.raises(McpServerNameError) as prefix:
            harness.session_mcp_servers({"my.adder": {"command": "/bin/true"}})  # same prefix
        with pytest.raises(McpServerTableError) as bad:
            harness.session_mcp_servers({"other": {"command": "x", "url": "http://h"}})
    assert same.value.server == "my_adder"
    assert "'my_adder'" in str(same.value)
    assert prefix.value.configured == "my_adder"
    assert bad.value.server == "other"


async def test_a_session_tool_named_like_a_built_in_one_is_refused(tmp_path: Path) -> None:
    async with compose(
        configured(tmp_path / "home", ""), models={"scripted": ScriptedModel([])}
    ) as harness:
        bash = harness.loop().tools.get("bash")
        assert bash is not None
        with pytest.raises(DshError, match="'bash'"):
            await harness.create(model="scripted:m", cwd=tmp_path, tools=[bash])
        assert harness.live() == []
