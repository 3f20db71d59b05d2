"""Failures, timeouts, the hook child's environment and cwd, and what the session log records."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from dsh_llm import UserMessage
from dsh_tools import ToolCall, ToolDefinition, ToolExecution
from support import FakeAgent, Rig, config, group, read_json, script


class Args(BaseModel):
    command: str


class Bash(ToolDefinition[Args]):
    name = "Bash"
    description = "Echo the command."
    parameters = Args

    async def execute(self, args: Args, execution: ToolExecution) -> str:
        return f"ran {args.command}"


def call(command: str = "ls") -> ToolCall:
    return ToolCall("c1", "Bash", json.dumps({"command": command}))


@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
async def test_a_timed_out_hook_is_a_logged_non_blocking_error(
    tmp_path: Path, dialect: str, caplog: pytest.LogCaptureFixture
) -> None:
    hook = script(tmp_path, "slow.sh", "sleep 30; exit 2\n")
    rig = Rig(config(dialect, {"PreToolUse": [group(hook, timeout=0.5)]}))
    rig.tools.register(Bash())
    rig.agent.start_turn()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="dsh_hooks"):
        result = await rig.tools.execute(call(), rig.agent)
    assert time.monotonic() - started < 10
    assert result.text == "ran ls"  # the call ran
    assert "timed out after 0.5 s" in caplog.text
    (outcome,) = rig.agent.events("hook/result")
    assert outcome["decision"] == "error"
    assert "exitCode" not in outcome
    assert outcome["stderrSummary"] == "the hook timed out after 0.5 s"


async def test_the_default_timeout_applies_when_the_hook_sets_none(tmp_path: Path) -> None:
    hook = script(tmp_path, "slow.sh", "sleep 30\n")
    rig = Rig(config("codex", {"Stop": [group(hook)]}, default_timeout=0.5))
    rig.agent.start_turn()
    await rig.turn_stopping()
    assert rig.executor.requests[0].timeout == 0.5
    assert rig.agent.sent == []


async def test_a_failing_hook_does_not_block_and_its_stderr_is_logged(tmp_path: Path) -> None:
    hook = script(tmp_path, "bad.sh", "echo 'oops: something broke' >&2; exit 1\n")
    rig = Rig(config("claude-code", {"PreToolUse": [group(hook)], "Stop": [group(hook)]}))
    rig.tools.register(Bash())
    rig.agent.start_turn()
    assert (await rig.tools.execute(call(), rig.agent)).text == "ran ls"
    await rig.turn_stopping()
    assert rig.agent.sent == []
    results = rig.agent.events("hook/result")
    assert [(r["point"], r["decision"], r["exitCode"]) for r in results] == [
        ("PreToolUse", "error", 1),
        ("Stop", "error", 1),
    ]
    assert results[0]["stderrSummary"] == "oops: something broke"


async def test_a_hook_that_cannot_start_is_a_non_blocking_error(tmp_path: Path) -> None:
    agent = FakeAgent(cwd=str(tmp_path / "gone"))  # the session cwd does not exist
    rig = Rig(config("codex", {"PreToolUse": [group("exit 2")]}), agent)
    rig.tools.register(Bash())
    rig.agent.start_turn()
    assert (await rig.tools.execute(call(), rig.agent)).text == "ran ls"
    (outcome,) = rig.agent.events("hook/result")
    assert outcome["decision"] == "error"
    assert outcome["stderrSummary"].startswith("the hook could not run")


async def test_stderr_summary_is_capped(tmp_path: Path) -> None:
    hook = script(tmp_path, "loud.sh", "printf 'x%.0s' $(seq 100) >&2; exit 1\n")
    rig = Rig(config("codex", {"Stop": [group(hook)]}, stderr_summary_max_chars=10))
    rig.agent.start_turn()
    await rig.turn_stopping()
    (outcome,) = rig.agent.events("hook/result")
    assert outcome["stderrSummary"] == "x" * 10 + "…"


async def test_hook_children_get_no_dsh_variables_unless_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_STALE_PARENT", "stale")
    monkeypatch.setenv("DSH_SESSION_ID", "someone-else")
    dump = script(tmp_path, "env.sh", f'env | grep "^DSH_" | sort > "{tmp_path}/$1.env"; true\n')
    plain = Rig(config("codex", {"Stop": [group(f"{dump} plain")]}))
    plain.agent.start_turn()
    await plain.turn_stopping()
    assert (tmp_path / "plain.env").read_text() == ""
    given = Rig(config("codex", {"Stop": [group(f"{dump} given")]}, dsh_env={"DSH_HOME": "/dsh"}))
    given.agent.start_turn()
    await given.turn_stopping()
    assert (tmp_path / "given.env").read_text() == "DSH_HOME=/dsh\n"


async def test_hooks_run_in_the_session_cwd_with_claude_project_dir(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    where = script(
        tmp_path,
        "where.sh",
        f'echo "$(pwd) ${{CLAUDE_PROJECT_DIR-unset}} $EXTRA" > "{tmp_path}/$1"\n',
    )
    table = {"Stop": [group(f"{where} out")]}
    rig = Rig(config("claude-code", table, env={"EXTRA": "x"}), FakeAgent(cwd=str(work)))
    rig.agent.start_turn()
    await rig.turn_stopping()
    assert (tmp_path / "out").read_text() == f"{work} {work} x\n"
    codex = Rig(config("codex", table), FakeAgent(cwd=str(work)))
    codex.agent.start_turn()
    await codex.turn_stopping()
    assert (tmp_path / "out").read_text() == f"{work} unset \n"


async def test_hook_events_are_logged_only_inside_an_open_turn(tmp_path: Path) -> None:
    rig = Rig(config("codex", {"PreToolUse": [group("cat >/dev/null", matcher="Bash")]}))
    rig.tools.register(Bash())
    await rig.tools.execute(call(), rig.agent)  # between turns
    assert rig.agent.events("hook/") == []
    rig.agent.start_turn()
    await rig.tools.execute(call(), rig.agent)
    invoked, result = (e for e in rig.agent.session.events if e.type.startswith("hook/"))
    assert invoked.type == "hook/invoked"
    assert result.type == "hook/result"
    assert invoked.data == {
        "turn": 1,
        "point": "PreToolUse",
        "dialect": "codex",
        "handlerId": invoked.data["handlerId"],  # type: ignore[index]
        "matcher": "Bash",
    }
    assert result.data["decision"] == "pass"
    assert result.data["exitCode"] == 0
    assert isinstance(result.data["durationMs"], int)  # type: ignore[index]


async def test_session_start_outside_a_turn_is_logged_only_by_python_logging(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hook = script(tmp_path, "start.sh", "exit 1\n")
    rig = Rig(config("claude-code", {"SessionStart": [group(hook)]}))
    with caplog.at_level(logging.WARNING, logger="dsh_hooks"):
        await rig.session_start()
        await rig.runner._starting[rig.agent.session].task
    assert "SessionStart hook" in caplog.text
    assert "exit code 1" in caplog.text
    assert rig.agent.events("hook/") == []


async def test_several_matching_hooks_run_in_order_and_the_strictest_wins(tmp_path: Path) -> None:
    order = tmp_path / "order"
    first = script(tmp_path, "a.sh", f'echo a >> "{order}"; echo \'{{"decision":"approve"}}\'\n')
    second = script(tmp_path, "b.sh", f'echo b >> "{order}"; echo "second says no" >&2; exit 2\n')
    table = {"PreToolUse": [group(first, matcher="*"), group(second, matcher="Bash")]}
    rig = Rig(config("claude-code", table))
    rig.tools.register(Bash())
    result = await rig.tools.execute(call(), rig.agent)
    assert result.text == "Error: second says no"
    assert order.read_text() == "a\nb\n"


async def test_the_prompt_payload_joins_the_entering_user_messages(tmp_path: Path) -> None:
    save = script(tmp_path, "save.sh", f'cat > "{tmp_path}/p.json"\n')
    rig = Rig(config("claude-code", {"UserPromptSubmit": [group(save)]}))
    rig.agent.start_turn()
    await rig.pre_step(UserMessage.from_text("one"), UserMessage.from_text("two"))
    assert read_json(tmp_path / "p.json")["prompt"] == "one\n\ntwo"
