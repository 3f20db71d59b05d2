"""dsh-hooks in a real agent loop with real bash hooks run by dsh-bash-local, in both dialects.

One conversation exercises every event: a SessionStart context enters before the first prompt,
a PreToolUse hook refuses ``rm``, a PostToolUse hook blocks a lint result, a Stop hook continues
the turn once (then sees ``stop_hook_active``), a UserPromptSubmit hook rejects a later prompt.
Every loop runs the invariant companion (``check_requests=True``). Models are keyless
``ScriptedModel``s.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from dsh_agent import AgentOptions, Extensions
from dsh_agent_loop import AgentLoop, LoopAgent
from dsh_bash_local import LocalBashConfig, LocalBashExecutor
from dsh_hooks import HookRunner, HooksConfig
from dsh_llm import PluginSource, TextBlock, UserMessage
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_tools import ToolDefinition, ToolExecution, ToolRegistry
from shapes import flat

OPTIONS = AgentOptions(provider="scripted", model="m")
DIALECTS = ["claude-code", "codex"]


class Args(BaseModel):
    command: str


class Bash(ToolDefinition[Args]):
    """A stand-in shell tool: hooks see its calls; it only echoes."""

    name = "Bash"
    description = "Run a command (pretend)."
    parameters = Args

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def execute(self, args: Args, execution: ToolExecution) -> str:
        self.ran.append(args.command)
        return f"ran {args.command}"


def script(directory: Path, name: str, body: str) -> str:
    path = directory / name
    path.write_text("#!/usr/bin/env bash\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def hooks_table(tmp_path: Path, dialect: str) -> dict[str, Any]:
    if dialect == "claude-code":
        context = {
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": "project rule: be brief",
            }
        }
        start_body = f"cat >/dev/null; echo '{json.dumps(context)}'\n"
    else:
        start_body = "cat >/dev/null; echo 'project rule: be brief'\n"
    start = script(tmp_path, "start.sh", start_body)
    prompt = script(
        tmp_path, "prompt.sh", 'grep -q forbidden && { echo "not that" >&2; exit 2; }\nexit 0\n'
    )
    guard = script(
        tmp_path,
        "guard.sh",
        'grep -q \'"command": "rm\' && { echo "no rm please" >&2; exit 2; }\nexit 0\n',
    )
    post = script(
        tmp_path,
        "post.sh",
        'grep -q \'"command": "lint\' && echo \'{"decision": "block", "reason": "lint failed"}\'\n'
        "exit 0\n",
    )
    stop = script(
        tmp_path,
        "stop.sh",
        f'payload=$(cat); echo "$payload" >> "{tmp_path}/stops.jsonl"\n'
        'case "$payload" in *\'"stop_hook_active": true\'*) exit 0;; esac\n'
        'echo \'{"decision": "block", "reason": "run the tests first"}\'\n',
    )

    def group(command: str, matcher: str | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {"hooks": [{"type": "command", "command": command}]}
        if matcher is not None:
            entry["matcher"] = matcher
        return entry

    return {
        "hooks": {
            "SessionStart": [group(start, "startup")],
            "UserPromptSubmit": [group(prompt)],
            "PreToolUse": [group(guard, "Bash|Write")],
            "PostToolUse": [group(post, "Bash")],
            "Stop": [group(stop)],
        }
    }


@asynccontextmanager
async def running(
    model: ScriptedModel, config: HooksConfig, cwd: Path, tool: Bash
) -> AsyncIterator[tuple[AgentLoop, LoopAgent]]:
    extensions, tools = Extensions(), ToolRegistry()
    tools.register(tool)
    async with LocalBashExecutor(LocalBashConfig(timeout=10)) as executor:
        runner = HookRunner(config, executor)
        runner.install(extensions, tools)
        try:
            async with AgentLoop(model, tools, extensions=extensions, check_requests=True) as loop:
                agent = await loop.create(options=OPTIONS, cwd=str(cwd))
                yield loop, agent
                assert loop.invariant_failures == []
        finally:
            await runner.aclose()


def texts(message: Any) -> list[str]:
    return [block.text for block in message.content if isinstance(block, TextBlock)]


def events(agent: LoopAgent, kind: str) -> list[Any]:
    return [event for event in agent.session.events if event.type == kind]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_every_event_and_decision_in_a_real_loop(tmp_path: Path, dialect: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    config = HooksConfig.from_document(hooks_table(tmp_path, dialect), dialect=dialect)
    model = ScriptedModel(
        [
            tool_call_response(
                ("c1", "Bash", {"command": "rm -rf build"}), ("c2", "Bash", {"command": "lint"})
            ),
            text_response("done"),
            text_response("tests ran"),
        ]
    )
    tool = Bash()
    async with running(model, config, work, tool) as (_loop, agent):
        agent.followup("please clean up")
        await agent.wait_idle()
        agent.followup("do the forbidden thing")
        await agent.wait_idle()

    plugin = PluginSource(plugin=f"hooks-{dialect}")
    first = model.requests[0].messages
    assert isinstance(first[0], UserMessage)
    assert first[0].source == plugin
    assert texts(first[0]) == ["project rule: be brief"]
    assert texts(first[1]) == ["please clean up"]

    assert tool.ran == ["lint"]  # rm was refused before it ran
    results = {
        flat("tool/result", e.data)["callId"]: flat("tool/result", e.data)
        for e in events(agent, "tool/result")
    }
    assert results["c1"]["isError"] is True
    assert results["c1"]["content"] == [{"type": "text", "text": "Error: no rm please"}]
    assert results["c2"]["isError"] is True
    assert [b["text"] for b in results["c2"]["content"]] == [
        "ran lint",
        "PostToolUse hook: lint failed",
    ]

    # the Stop hook continued the turn once, with its reason, and then let it end
    assert len(model.requests) == 3
    steer = model.requests[2].messages[-1]
    assert isinstance(steer, UserMessage)
    assert steer.source == plugin
    assert texts(steer) == ["run the tests first"]
    stops = [json.loads(line) for line in (tmp_path / "stops.jsonl").read_text().splitlines()]
    assert [s["stop_hook_active"] for s in stops] == [False, True]
    assert {s["transcript_path"] for s in stops} == {"" if dialect == "claude-code" else None}
    assert {s["cwd"] for s in stops} == {str(work)}
    if dialect == "codex":
        assert [s["last_assistant_message"] for s in stops] == ["done", "tests ran"]

    # the second prompt was rejected: no model call, the turn ended blocked
    ends = [e.data["reason"] for e in events(agent, "turn/end")]
    assert ends == [{"kind": "completed"}, {"kind": "blocked"}]

    # every hook run is an invoked/result pair inside an open turn
    open_turn = None
    pairs: list[tuple[str, str]] = []
    for event in agent.session.events:
        if event.type == "turn/start":
            open_turn = event.data["turn"]
        elif event.type == "turn/end":
            open_turn = None
        elif event.type.startswith("hook/"):
            assert open_turn is not None
            assert event.data["turn"] == open_turn
            pairs.append((event.type, event.data["point"]))
    assert pairs[:2] == [("hook/invoked", "SessionStart"), ("hook/result", "SessionStart")]
    points = [point for kind, point in pairs if kind == "hook/result"]
    assert points == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "Stop",
        "UserPromptSubmit",
    ]


async def test_timed_out_and_failing_hooks_do_not_block_and_see_no_dsh_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_STALE_PARENT", "stale")
    env_dump = tmp_path / "env.txt"
    slow = script(tmp_path, "slow.sh", "sleep 30; exit 2\n")
    broken = script(
        tmp_path, "broken.sh", f'env | grep "^DSH_" > "{env_dump}"; echo broken >&2; exit 3\n'
    )
    config = HooksConfig.model_validate(
        {
            "dialect": "claude-code",
            "hooks": {
                "PreToolUse": [{"hooks": [{"type": "command", "command": slow, "timeout": 1}]}],
                "PostToolUse": [{"hooks": [{"type": "command", "command": broken}]}],
            },
        }
    )
    model = ScriptedModel(
        [tool_call_response(("c1", "Bash", {"command": "ls"})), text_response("ok")]
    )
    tool = Bash()
    async with running(model, config, tmp_path, tool) as (_loop, agent):
        agent.followup("list")
        await agent.wait_idle()
    assert tool.ran == ["ls"]
    (result,) = events(agent, "tool/result")
    assert flat("tool/result", result.data)["isError"] is False
    outcomes = [e.data for e in events(agent, "hook/result")]
    assert [(o["point"], o["decision"], o.get("exitCode")) for o in outcomes] == [
        ("PreToolUse", "error", None),
        ("PostToolUse", "error", 3),
    ]
    assert outcomes[0]["stderrSummary"] == "the hook timed out after 1 s"
    assert outcomes[1]["stderrSummary"] == "broken"
    assert env_dump.read_text() == ""  # no DSH_* at all, the stale one scrubbed
