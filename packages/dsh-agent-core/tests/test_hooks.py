"""Command hooks as composed (issue 18): [hooks] in the agent-core TOML, the dialect and options
with one array of tables per event beside them; a PreToolUse hook script that exits 2 blocks the
call with its reason; a bad table is one error naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh_agent_core import Config, ConfigError, compose, load_config
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response


def configured(home: Path, text: str) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
async def test_a_pre_tool_use_hook_blocks_a_bash_call_with_its_reason(
    tmp_path: Path, dialect: str
) -> None:
    seen = tmp_path / "payload.json"
    script = tmp_path / "guard.sh"
    script.write_text(f"#!/bin/bash\ncat > {seen}\necho 'no rm here' >&2\nexit 2\n")
    script.chmod(0o755)
    text = (
        f'[sandbox]\nmode = "danger-full-access"\n\n[hooks]\ndialect = "{dialect}"\n\n'
        f'[[hooks.PreToolUse]]\nmatcher = "bash"\n'
        f'hooks = [{{ type = "command", command = "{script}" }}]\n'
    )
    command = {"command": "touch should-not-exist", "description": "Touch"}
    model = ScriptedModel([tool_call_response(("c1", "bash", command)), text_response("ok")])
    async with compose(configured(tmp_path / "home", text), models={"scripted": model}) as h:
        agent = await h.create("try", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        (result,) = [e.to_wire()["data"] for e in agent.session.events if e.type == "tool/result"]
    assert result["isError"]
    assert "no rm here" in json.dumps(result["content"])
    assert not (tmp_path / "should-not-exist").exists()
    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "PreToolUse"
    assert payload["tool_name"] == "bash"
    assert payload["transcript_path"] == ("" if dialect == "claude-code" else None)


def test_a_bad_hook_table_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    text = '[hooks]\ndialect = "claude-code"\n\n[[hooks.PreToolUse]]\ncolour = "red"\n'
    with pytest.raises(ConfigError, match="hooks"):
        configured(tmp_path / "home", text)
