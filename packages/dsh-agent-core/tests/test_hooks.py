"""Command hooks as composed (issue 18): [hooks] in the agent-core TOML, the dialect and options
with one array of tables per event beside them; a PreToolUse hook script that exits 2 blocks the
call with its reason; a bad table is one error naming the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh_agent_core import Config, ConfigError, compose, load_config
from dsh_llm import ToolResultMessage
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from shapes import flat


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
        (result,) = [
            flat("tool/result", e.to_wire()["data"])
            for e in agent.session.events
            if e.type == "tool/result"
        ]
    assert result["isError"]
    assert "no rm here" in json.dumps(result["content"])
    assert not (tmp_path / "should-not-exist").exists()
    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "PreToolUse"
    assert payload["tool_name"] == ("Bash" if dialect == "claude-code" else "bash")
    assert payload["transcript_path"] == ("" if dialect == "claude-code" else None)


def test_a_bad_hook_table_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    text = '[hooks]\ndialect = "claude-code"\n\n[[hooks.PreToolUse]]\ncolour = "red"\n'
    with pytest.raises(ConfigError, match="hooks"):
        configured(tmp_path / "home", text)


def _recorder(directory: Path, name: str) -> Path:
    """A hook script appending each payload it reads as one line of <name>.jsonl."""
    script = directory / f"{name}.sh"
    script.write_text(
        f"#!/bin/bash\ncat >> {directory / name}.jsonl\necho >> {directory / name}.jsonl\n"
    )
    script.chmod(0o755)
    return script


def _payloads(directory: Path, name: str) -> list[dict]:
    path = directory / f"{name}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_a_session_create_child_runs_subagent_hooks_and_a_full_settings_table_loads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    events = ("SessionStart", "Stop", "SubagentStart", "SubagentStop")
    text = '[presets.helper]\nsystem = "You help."\n\n[hooks]\ndialect = "claude-code"\n'
    for event in events:
        text += f'\n[[hooks.{event}]]\nhooks = [{{ command = "{_recorder(hooks, event)}" }}]\n'
    # what a Claude Code settings file also holds: an event and a handler dsh-hooks does not run
    text += '\n[[hooks.Notification]]\nhooks = [{ command = "notify-send hi" }]\n'
    text += '\n[[hooks.PreToolUse]]\nhooks = [{ type = "prompt", prompt = "Safe?" }]\n'

    def answer(request: Any) -> Any:
        """Parent and child share the model: answer by who asks and how far they got."""
        prompts = [m.content[0].text for m in request.messages if m.source.kind == "user"]
        if prompts[:1] == ["child task"]:
            return text_response("child done")
        if not any(isinstance(m, ToolResultMessage) for m in request.messages):
            create = json.dumps({"prompt": "child task"})
            return tool_call_response(("c1", "session_create", create))
        return text_response("parent done")

    model = ScriptedModel([answer, answer, answer])
    with caplog.at_level("WARNING", logger="dsh_hooks"):
        config = configured(tmp_path / "home", text)
        async with compose(config, models={"scripted": model}) as harness:
            parent = await harness.create(
                "spawn", model="scripted:m", cwd=tmp_path, preset="helper"
            )
            await parent.wait_idle()
            (child,) = [a for a in harness.live() if a.id != parent.id]
            await child.wait_idle()
    assert [p["session_id"] for p in _payloads(hooks, "SessionStart")] == [parent.id]
    assert [p["session_id"] for p in _payloads(hooks, "Stop")] == [parent.id]
    (start,) = _payloads(hooks, "SubagentStart")
    assert (start["session_id"], start["agent_id"], start["agent_type"]) == (
        child.id,
        child.id,
        "helper",
    )
    (stop,) = _payloads(hooks, "SubagentStop")
    assert (stop["agent_id"], stop["stop_hook_active"]) == (child.id, False)
    assert "hooks.Notification: not an event dsh-hooks runs (left out)" in caplog.text
    assert "a 'prompt' handler, not a command (left out)" in caplog.text


async def test_hooks_run_unconfined_while_the_models_commands_are_sandboxed(
    tmp_path: Path,
) -> None:
    """Hooks are the user's own configuration: as in Claude Code and Codex they run with the
    user's rights, never inside the sandbox that confines the model's commands."""
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    script = tmp_path / "note.sh"
    script.write_text(f"#!/bin/bash\ncat > /dev/null\ntouch {work}/.git/hook-was-here\n")
    script.chmod(0o755)
    text = (
        '[hooks]\ndialect = "claude-code"\n\n[[hooks.PreToolUse]]\n'
        f'hooks = [{{ command = "{script}" }}]\n'
    )
    command = {"command": "touch .git/model-was-here", "description": "Touch"}
    model = ScriptedModel([tool_call_response(("c1", "bash", command)), text_response("ok")])
    async with compose(configured(tmp_path / "home", text), models={"scripted": model}) as h:
        agent = await h.create("try", model="scripted:m", cwd=work)
        await agent.wait_idle()
    assert (work / ".git" / "hook-was-here").exists()  # the hook wrote where it liked
    assert not (work / ".git" / "model-was-here").exists()  # .git is read-only to the model


def test_the_dump_shows_hooks_as_written_and_what_was_left_out(tmp_path: Path) -> None:
    text = (
        '[hooks]\ndialect = "claude-code"\n\n[[hooks.PreToolUse]]\nmatcher = "Bash"\n'
        'hooks = [{ command = "./guard.sh", timeout = 30 }]\n\n'
        '[[hooks.Notification]]\nhooks = [{ command = "notify-send hi" }]\n'
    )
    dumped = configured(tmp_path / "home", text).dump()["hooks"]
    assert dumped["PreToolUse"] == [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 30}]}
    ]
    assert "Stop" not in dumped
    assert "hooks" not in dumped  # no internal field names
    assert dumped["ignored"] == ["hooks.Notification: not an event dsh-hooks runs (left out)"]
    assert dumped["dialect"] == "claude-code"


async def test_hooks_keep_their_own_timeouts_whatever_caps_the_models_bash(
    tmp_path: Path,
) -> None:
    """A hook's `timeout = 900` is not cut to the model's `bash.max_timeout`."""
    from dsh_shell import ShellExecRequest

    text = (
        '[bash]\nmax_timeout = 60\ntimeout = 30\n\n[hooks]\ndialect = "codex"\n\n'
        '[[hooks.Stop]]\nhooks = [{ command = "true", timeout = 900 }]\n'
    )
    async with compose(configured(tmp_path / "home", text)) as harness:
        executor = harness._hook_executor
        assert executor is not None
        assert executor.resolve(ShellExecRequest("true", timeout=900)).timeout == 900
        assert executor.resolve(ShellExecRequest("true")).timeout == 600  # hooks' default
        model_side = harness.executor.resolve(ShellExecRequest("true", timeout=900))
        assert model_side.timeout == 60
