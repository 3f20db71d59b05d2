"""Claude Code's SubagentStart / SubagentStop for child sessions (``origin: "subagent"``),
with real bash hook scripts; Codex, which has no subagent events, sees a child as any session."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_agent import Enter
from dsh_llm import PluginSource, TextBlock, UserMessage
from support import FakeAgent, Rig, config, group, read_json, script
from test_events import Bash, call, capture, prompt

CC = PluginSource(plugin="hooks-claude-code")


def child(tmp_path: Path, preset: str | None = "reviewer") -> FakeAgent:
    return FakeAgent(
        "child-1",
        cwd=str(tmp_path),
        parent_session="parent-1",
        origin="subagent",
        delegation_depth=1,
        agent_preset=preset,
    )


async def drive(rig: Rig) -> None:
    """What the loop does for one turn with one tool call."""
    rig.tools.register(Bash())
    await rig.session_start("startup")
    rig.agent.start_turn()
    await rig.pre_step(prompt("review the diff"))
    await rig.tools.execute(call("git diff"), rig.agent)
    rig.agent.answer("looks fine")
    await rig.turn_stopping()
    rig.agent.end_turn()


@pytest.mark.parametrize(
    ("preset", "agent_type"), [("reviewer", "reviewer"), (None, "general-purpose")]
)
async def test_a_child_runs_subagent_events_in_place_of_session_start_and_stop(
    tmp_path: Path, preset: str | None, agent_type: str
) -> None:
    events = (
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "Stop",
        "SubagentStart",
        "SubagentStop",
    )
    table = {event: [group(capture(tmp_path, event))] for event in events}
    rig = Rig(config("claude-code", table), child(tmp_path, preset))
    await drive(rig)
    base = {"session_id": "child-1", "transcript_path": "", "cwd": str(tmp_path)}
    assert read_json(tmp_path / "SubagentStart.json") == {
        **base,
        "hook_event_name": "SubagentStart",
        "agent_id": "child-1",
        "agent_type": agent_type,
    }
    assert read_json(tmp_path / "SubagentStop.json") == {
        **base,
        "hook_event_name": "SubagentStop",
        "stop_hook_active": False,
        "agent_id": "child-1",
        "agent_type": agent_type,
        "agent_transcript_path": "",
    }
    # the child's tool calls run PreToolUse; its prompt is the parent's, not the user's
    assert read_json(tmp_path / "PreToolUse.json")["session_id"] == "child-1"
    for absent in ("SessionStart", "UserPromptSubmit", "Stop"):
        assert not (tmp_path / f"{absent}.json").exists(), absent
    points = [e["point"] for e in rig.agent.events("hook/invoked")]
    assert points == ["SubagentStart", "PreToolUse", "SubagentStop"]


async def test_subagent_matchers_select_the_agent_type(tmp_path: Path) -> None:
    table = {
        "SubagentStart": [group(capture(tmp_path, "explorer"), matcher="Explore")],
        "SubagentStop": [group(capture(tmp_path, "reviewer"), matcher="reviewer|tester")],
    }
    rig = Rig(config("claude-code", table), child(tmp_path))
    await drive(rig)
    assert not (tmp_path / "explorer.json").exists()
    assert read_json(tmp_path / "reviewer.json")["agent_type"] == "reviewer"


async def test_subagent_start_context_enters_before_the_childs_first_prompt(
    tmp_path: Path,
) -> None:
    body = (
        'echo \'{"hookSpecificOutput": {"hookEventName": "SubagentStart", '
        '"additionalContext": "only read, never write"}}\'\n'
    )
    rig = Rig(
        config("claude-code", {"SubagentStart": [group(script(tmp_path, "s.sh", body))]}),
        child(tmp_path),
    )
    await rig.session_start("startup")
    rig.agent.start_turn()
    decision = await rig.pre_step(prompt("review the diff"))
    assert decision == Enter(
        (
            UserMessage(content=[TextBlock(text="only read, never write")], source=CC),
            prompt("review the diff"),
        )
    )
    (invoked,) = rig.agent.events("hook/invoked")
    assert (invoked["point"], invoked["turn"]) == ("SubagentStart", 1)


async def test_subagent_stop_block_keeps_the_child_working(tmp_path: Path) -> None:
    body = (
        f'cat > "{tmp_path}/last.json"\n'
        'grep -q \'"stop_hook_active": true\' "' + str(tmp_path) + '/last.json" && exit 0\n'
        'echo "write the summary file first" >&2\n'
        "exit 2\n"
    )
    rig = Rig(
        config("claude-code", {"SubagentStop": [group(script(tmp_path, "stop.sh", body))]}),
        child(tmp_path),
    )
    rig.agent.start_turn()
    await rig.turn_stopping()
    ((messages, target),) = rig.agent.sent
    assert target == "next-step"
    assert messages == [UserMessage.from_text("write the summary file first", source=CC)]
    await rig.turn_stopping()
    assert read_json(tmp_path / "last.json")["stop_hook_active"] is True
    assert len(rig.agent.sent) == 1
    (result, _) = rig.agent.events("hook/result")
    assert result["decision"] == "block"


async def test_a_top_level_session_runs_no_subagent_hooks(tmp_path: Path) -> None:
    table = {
        "SubagentStart": [group(capture(tmp_path, "SubagentStart"))],
        "SubagentStop": [group(capture(tmp_path, "SubagentStop"))],
    }
    rig = Rig(config("claude-code", table), FakeAgent("top", cwd=str(tmp_path)))
    await drive(rig)
    assert not (tmp_path / "SubagentStart.json").exists()
    assert not (tmp_path / "SubagentStop.json").exists()
    assert rig.agent.events("hook/") == []


async def test_a_resumed_child_runs_session_start_resume(tmp_path: Path) -> None:
    table = {
        "SessionStart": [group(capture(tmp_path, "SessionStart"))],
        "SubagentStart": [group(capture(tmp_path, "SubagentStart"))],
    }
    rig = Rig(config("claude-code", table), child(tmp_path))
    await rig.session_start("resume")
    rig.agent.start_turn()
    await rig.pre_step(prompt("go on"))
    assert read_json(tmp_path / "SessionStart.json")["source"] == "resume"
    assert not (tmp_path / "SubagentStart.json").exists()


async def test_codex_sees_a_child_as_any_session(tmp_path: Path) -> None:
    table = {event: [group(capture(tmp_path, event))] for event in ("SessionStart", "Stop")}
    rig = Rig(config("codex", table), child(tmp_path))
    await drive(rig)
    assert read_json(tmp_path / "SessionStart.json")["session_id"] == "child-1"
    assert read_json(tmp_path / "Stop.json")["hook_event_name"] == "Stop"
