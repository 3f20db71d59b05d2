"""PostgreSQL and MCP come with extras (``dsh-agent-core[postgres]``, ``[mcp]``): without them a
configuration that asks for one is refused in one line naming the extra, and one that does not
ask works. Here the extras are hidden from the import system (``sys.modules[name] = None``);
``nox -s bare`` checks the same on a real install without them (tools/check_bare_install.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh_agent_core import Config, MissingExtraError, compose, load_config
from dsh_agent_core.cli import cli
from dsh_llm.testing import ScriptedModel, text_response

MCP_SERVER = '[mcp.servers.github]\ncommand = "github-mcp"\nenv = { TOKEN = "literal" }\n'


@pytest.fixture
def without_postgres(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dsh_persistence_postgres", None)


@pytest.fixture
def without_mcp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dsh_tool_mcp", None)


def configured(home: Path, text: str) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home), "DSH_POSTGRES_DSN": "postgresql://x@h/db"})


@pytest.mark.usefixtures("without_postgres")
def test_a_postgres_backend_without_the_extra_is_refused_naming_it(tmp_path: Path) -> None:
    config = configured(tmp_path / "home", '[persistence]\nbackend = "postgres"\n')
    with pytest.raises(MissingExtraError) as caught:
        compose(config)
    assert str(caught.value) == (
        'the config\'s persistence backend "postgres" needs dsh-agent-core[postgres]: '
        "pip install 'dsh-agent-core[postgres]'"
    )
    assert (caught.value.part, caught.value.extra) == ('persistence backend "postgres"', "postgres")


@pytest.mark.usefixtures("without_mcp")
def test_an_mcp_server_without_the_extra_is_refused_naming_it(tmp_path: Path) -> None:
    config = configured(tmp_path / "home", MCP_SERVER)  # the config still loads
    with pytest.raises(MissingExtraError) as caught:
        compose(config)
    assert str(caught.value) == (
        'the config\'s MCP server "github" needs dsh-agent-core[mcp]: '
        "pip install 'dsh-agent-core[mcp]'"
    )


@pytest.mark.usefixtures("without_mcp")
def test_an_mcp_server_without_the_extra_still_dumps_masked(tmp_path: Path) -> None:
    dumped = configured(tmp_path / "home", MCP_SERVER).dump()["mcp"]
    assert dumped == {"servers": {"github": {"command": "github-mcp", "env": {"TOKEN": "***"}}}}


@pytest.mark.usefixtures("without_mcp", "without_postgres")
async def test_a_config_asking_for_neither_runs_without_them(tmp_path: Path) -> None:
    config = configured(tmp_path / "home", "")
    model = ScriptedModel([text_response("Hi.")])
    async with compose(config, models={"scripted": model}) as harness:
        assert harness.mcp.status() == []
        agent = await harness.create("hello", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        assert not any(name.startswith("mcp__") for name in harness.tool_names())
    assert len(model.requests) == 1


@pytest.mark.usefixtures("without_mcp")
def test_the_dsh_command_says_which_extra_in_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    configured(home, MCP_SERVER)
    done = CliRunner().invoke(cli, ["run", "hello"], env={"DSH_HOME": str(home)})
    assert done.exit_code != 0
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert lines == [
        'dsh: error: the config\'s MCP server "github" needs dsh-agent-core[mcp]: '
        "pip install 'dsh-agent-core[mcp]'"
    ]
