"""Every event and decision, in both dialects, with real bash hook scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from dsh_agent import CancelCause, Enter, Reject
from dsh_llm import PluginSource, TextBlock, UserMessage
from dsh_tools import Allow, Deny, ToolCall, ToolDefinition, ToolExecution, ToolResult
from support import FakeAgent, Rig, config, group, read_json, script

DIALECTS = ["claude-code", "codex"]


class ShellArgs(BaseModel):
    command: str


class Bash(ToolDefinition[ShellArgs]):
    name = "Bash"
    description = "Echo the command."
    parameters = ShellArgs

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def execute(self, args: ShellArgs, execution: ToolExecution) -> str:
        self.ran.append(args.command)
        return f"ran {args.command}"


class Read(Bash):
    name = "Read"


def capture(tmp_path: Path, name: str) -> str:
    """A hook that saves its stdin as <name>.json and exits 0 silently."""
    return script(tmp_path, f"{name}.sh", f'cat > "{tmp_path}/{name}.json"\n')


def prompt(text: str) -> UserMessage:
    return UserMessage.from_text(text)


def call(command: str, call_id: str = "c1", tool: str = "Bash") -> ToolCall:
    return ToolCall(call_id, tool, json.dumps({"command": command}))


async def run_all_events(rig: Rig) -> None:
    rig.tools.register(Bash())
    await rig.session_start("startup")
    rig.agent.start_turn()
    await rig.pre_step(prompt("hello"))
    await rig.tools.execute(call("ls"), rig.agent)
    rig.agent.answer("all done")
    await rig.turn_stopping()
    rig.agent.end_turn()


# -- payloads ---------------------------------------------------------------------------------


async def test_claude_code_payloads_of_every_event(tmp_path: Path) -> None:
    table = {
        event: [group(capture(tmp_path, event))]
        for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
    }
    rig = Rig(config("claude-code", table), FakeAgent("sess-cc", cwd=str(tmp_path)))
    await run_all_events(rig)
    base = {"session_id": "sess-cc", "transcript_path": "", "cwd": str(tmp_path)}
    assert read_json(tmp_path / "SessionStart.json") == {
        **base,
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    assert read_json(tmp_path / "UserPromptSubmit.json") == {
        **base,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "hello",
    }
    tool = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "c1"}
    assert read_json(tmp_path / "PreToolUse.json") == {
        **base,
        "hook_event_name": "PreToolUse",
        **tool,
    }
    assert read_json(tmp_path / "PostToolUse.json") == {
        **base,
        "hook_event_name": "PostToolUse",
        **tool,
        "tool_response": "ran ls",
    }
    assert read_json(tmp_path / "Stop.json") == {
        **base,
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    # Claude Code's stdin ends with a newline
    assert (tmp_path / "Stop.json").read_text().endswith("}\n")


async def test_codex_payloads_of_every_event(tmp_path: Path) -> None:
    table = {
        event: [group(capture(tmp_path, event))]
        for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
    }
    rig = Rig(config("codex", table, model="gpt-5"), FakeAgent("sess-cx", cwd=str(tmp_path)))
    await run_all_events(rig)
    base = {
        "session_id": "sess-cx",
        "transcript_path": None,
        "cwd": str(tmp_path),
    }
    codex = {"model": "gpt-5", "permission_mode": "default"}
    assert read_json(tmp_path / "SessionStart.json") == {
        **base,
        "hook_event_name": "SessionStart",
        **codex,
        "source": "startup",
    }
    assert read_json(tmp_path / "UserPromptSubmit.json") == {
        **base,
        "hook_event_name": "UserPromptSubmit",
        **codex,
        "turn_id": "1",
        "prompt": "hello",
    }
    tool = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "c1"}
    assert read_json(tmp_path / "PreToolUse.json") == {
        **base,
        "hook_event_name": "PreToolUse",
        **codex,
        "turn_id": "1",
        **tool,
    }
    assert read_json(tmp_path / "PostToolUse.json") == {
        **base,
        "hook_event_name": "PostToolUse",
        **codex,
        "turn_id": "1",
        **tool,
        "tool_response": "ran ls",
    }
    assert read_json(tmp_path / "Stop.json") == {
        **base,
        "hook_event_name": "Stop",
        **codex,
        "turn_id": "1",
        "stop_hook_active": False,
        "last_assistant_message": "all done",
    }
    assert not (tmp_path / "Stop.json").read_text().endswith("\n")


@pytest.mark.parametrize(("dialect", "expected"), [("claude-code", ""), ("codex", None)])
async def test_transcript_path_is_empty_string_or_null(
    tmp_path: Path, dialect: str, expected: str | None
) -> None:
    rig = Rig(config(dialect, {"PreToolUse": [group(capture(tmp_path, "pre"))]}))
    rig.tools.register(Bash())
    await rig.tools.execute(call("ls"), rig.agent)  # with an agent
    assert read_json(tmp_path / "pre.json")["transcript_path"] == expected
    await rig.tools.execute(call("ls"))  # and without one
    payload = read_json(tmp_path / "pre.json")
    assert payload["transcript_path"] == expected
    assert payload["session_id"] == ""


async def test_codex_tool_input_is_the_shell_command_shape(tmp_path: Path) -> None:
    rig = Rig(config("codex", {"PreToolUse": [group(capture(tmp_path, "pre"))]}))
    rig.tools.register(Read())
    await rig.tools.execute(ToolCall("c9", "Read", json.dumps({"command": "x"})), rig.agent)
    assert read_json(tmp_path / "pre.json")["tool_input"] == {"command": "x"}


# -- PreToolUse -------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_pre_tool_use_exit_2_blocks_the_call_with_the_reason(
    tmp_path: Path, dialect: str
) -> None:
    guard = script(
        tmp_path,
        "guard.sh",
        'grep -q \'"command": "rm\' && { echo "no rm" >&2; exit 2; }\nexit 0\n',
    )
    rig = Rig(config(dialect, {"PreToolUse": [group(guard, matcher="Bash|Write")]}))
    bash = Bash()
    rig.tools.register(bash)
    refused = await rig.tools.execute(call("rm -rf /"), rig.agent)
    allowed = await rig.tools.execute(call("ls", "c2"), rig.agent)
    assert refused.is_error
    assert refused.text == "Error: no rm"
    assert refused.error is not None
    assert refused.error.code == "DENIED"
    assert not allowed.is_error
    assert bash.ran == ["ls"]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_pre_tool_use_json_deny_blocks_with_its_reason(tmp_path: Path, dialect: str) -> None:
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "read-only today",
        }
    }
    hook = script(tmp_path, "deny.sh", f"cat >/dev/null; echo '{json.dumps(answer)}'\n")
    rig = Rig(config(dialect, {"PreToolUse": [group(hook)]}))
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert result.text == "Error: read-only today"


async def test_pre_tool_use_block_without_reason_has_the_default_reason(tmp_path: Path) -> None:
    hook = script(tmp_path, "deny.sh", "exit 2\n")
    rig = Rig(config("codex", {"PreToolUse": [group(hook)]}))
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert result.text == "Error: blocked by PreToolUse hook"


async def test_pre_tool_use_matcher_selects_by_tool_name(tmp_path: Path) -> None:
    hook = script(tmp_path, "deny.sh", "exit 2\n")
    rig = Rig(config("claude-code", {"PreToolUse": [group(hook, matcher="Bash|Write")]}))
    rig.tools.register(Read())
    result = await rig.tools.execute(call("x", tool="Read"), rig.agent)
    assert not result.is_error


ASK = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "ask",
        "permissionDecisionReason": "sure?",
    }
}


async def test_claude_code_ask_goes_to_the_approver(tmp_path: Path) -> None:
    hook = script(tmp_path, "ask.sh", f"echo '{json.dumps(ASK)}'\n")
    rig = Rig(config("claude-code", {"PreToolUse": [group(hook)]}))
    rig.tools.register(Bash())
    asked: list[str | None] = []

    async def approver(execution: ToolExecution, reason: str | None) -> Allow | Deny:
        asked.append(reason)
        return Deny("the user said no")

    result = await rig.tools.execute(call("ls"), rig.agent, approver=approver)
    assert asked == ["sure?"]
    assert result.text == "Error: the user said no"


async def test_codex_honours_only_blocks_so_ask_runs_the_call(tmp_path: Path) -> None:
    hook = script(tmp_path, "ask.sh", f"echo '{json.dumps(ASK)}'\n")
    rig = Rig(config("codex", {"PreToolUse": [group(hook)]}))
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert result.text == "ran ls"


async def test_continue_false_refuses_the_call_and_cancels_the_turn(tmp_path: Path) -> None:
    hook = script(tmp_path, "halt.sh", 'echo \'{"continue": false, "stopReason": "halt now"}\'\n')
    rig = Rig(config("claude-code", {"PreToolUse": [group(hook)]}))
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert result.text == "Error: halt now"
    assert rig.agent.cancels == [CancelCause(kind="hook", reason="halt now")]


# -- PostToolUse ------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_post_tool_use_block_feeds_the_reason_back_with_the_result(
    tmp_path: Path, dialect: str
) -> None:
    hook = script(
        tmp_path, "post.sh", 'echo \'{"decision": "block", "reason": "lint failed: E501"}\'\n'
    )
    rig = Rig(config(dialect, {"PostToolUse": [group(hook, matcher="Bash")]}))
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert result.is_error
    assert result.error is not None
    assert result.error.code == "HOOK_BLOCKED"
    assert [b.text for b in result.content if isinstance(b, TextBlock)] == [
        "ran ls",
        "PostToolUse hook: lint failed: E501",
    ]


async def test_post_tool_use_exit_2_blocks_with_stderr(tmp_path: Path) -> None:
    hook = script(tmp_path, "post.sh", "echo 'formatting changed' >&2; exit 2\n")
    rig = Rig(config("claude-code", {"PostToolUse": [group(hook)]}))
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert result.is_error
    assert result.text == "ran lsPostToolUse hook: formatting changed"


async def test_post_tool_use_additional_context_reaches_the_model_with_the_result(
    tmp_path: Path,
) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "note"}}
    hook = script(tmp_path, "post.sh", f"echo '{json.dumps(answer)}'\n")
    rig = Rig(config("claude-code", {"PostToolUse": [group(hook)]}))
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert not result.is_error
    assert [b.text for b in result.content if isinstance(b, TextBlock)] == ["ran ls", "note"]


async def test_post_tool_use_that_passes_keeps_the_result(tmp_path: Path) -> None:
    hook = script(tmp_path, "post.sh", "cat >/dev/null\n")
    rig = Rig(config("codex", {"PostToolUse": [group(hook)]}))
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert result == ToolResult.ok("ran ls")


# -- UserPromptSubmit -------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_user_prompt_submit_block_rejects_the_prompt(tmp_path: Path, dialect: str) -> None:
    hook = script(
        tmp_path,
        "prompt.sh",
        'grep -q secret && { echo "no secrets in prompts" >&2; exit 2; }\nexit 0\n',
    )
    rig = Rig(config(dialect, {"UserPromptSubmit": [group(hook)]}))
    rig.agent.start_turn()
    assert await rig.pre_step(prompt("my secret is 42")) == Reject("no secrets in prompts")
    assert await rig.pre_step(prompt("hello")) == Enter((prompt("hello"),))


async def test_user_prompt_submit_json_block_rejects(tmp_path: Path) -> None:
    hook = script(tmp_path, "prompt.sh", 'echo \'{"decision": "block", "reason": "later"}\'\n')
    rig = Rig(config("claude-code", {"UserPromptSubmit": [group(hook)]}))
    rig.agent.start_turn()
    assert await rig.pre_step(prompt("x")) == Reject("later")


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_user_prompt_submit_context_enters_after_the_prompt(
    tmp_path: Path, dialect: str
) -> None:
    hook = script(tmp_path, "prompt.sh", "cat >/dev/null; echo 'branch: main'\n")
    rig = Rig(config(dialect, {"UserPromptSubmit": [group(hook)]}))
    rig.agent.start_turn()
    decision = await rig.pre_step(prompt("hello"))
    assert isinstance(decision, Enter)
    first, context = decision.messages
    assert first == prompt("hello")
    assert context.content == [TextBlock(text="branch: main")]
    assert context.source == PluginSource(plugin=f"hooks-{dialect}")


async def test_user_prompt_submit_ignores_plugin_messages(tmp_path: Path) -> None:
    hook = script(tmp_path, "prompt.sh", "exit 2\n")
    rig = Rig(config("claude-code", {"UserPromptSubmit": [group(hook)]}))
    rig.agent.start_turn()
    notice = UserMessage.from_text("job done", source=PluginSource(plugin="tool-jobs"))
    assert await rig.pre_step(notice, step=2) == Enter((notice,))


# -- Stop -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_stop_block_steers_the_turn_on_with_the_reason(tmp_path: Path, dialect: str) -> None:
    body = (
        f'cat > "{tmp_path}/stop-$$.json"\n'
        f'cp "{tmp_path}/stop-$$.json" "{tmp_path}/last.json"\n'
        'grep -q \'"stop_hook_active": true\' "' + str(tmp_path) + '/last.json" && exit 0\n'
        'echo \'{"decision": "block", "reason": "run the tests first"}\'\n'
    )
    hook = script(tmp_path, "stop.sh", body)
    rig = Rig(config(dialect, {"Stop": [group(hook)]}))
    rig.agent.start_turn()
    await rig.turn_stopping()
    ((messages, target),) = rig.agent.sent
    assert target == "next-step"
    assert messages == [
        UserMessage.from_text("run the tests first", source=PluginSource(plugin=f"hooks-{dialect}"))
    ]
    await rig.turn_stopping()  # the forced step ended: stop_hook_active is now true
    assert read_json(tmp_path / "last.json")["stop_hook_active"] is True
    assert len(rig.agent.sent) == 1


async def test_stop_exit_2_without_reason_continues_with_the_default(tmp_path: Path) -> None:
    hook = script(tmp_path, "stop.sh", "exit 2\n")
    rig = Rig(config("codex", {"Stop": [group(hook)]}))
    rig.agent.start_turn()
    await rig.turn_stopping()
    ((messages, _),) = rig.agent.sent
    assert messages[0].content == [TextBlock(text="continue: blocked by Stop hook")]


# -- SessionStart -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dialect", "body"),
    [
        (
            "claude-code",
            'echo \'{"hookSpecificOutput": {"hookEventName": "SessionStart", '
            '"additionalContext": "repo uses uv"}}\'\n',
        ),
        ("codex", "echo 'repo uses uv'\n"),
    ],
)
async def test_session_start_context_enters_before_the_first_prompt(
    tmp_path: Path, dialect: str, body: str
) -> None:
    hook = script(tmp_path, "start.sh", body)
    rig = Rig(config(dialect, {"SessionStart": [group(hook, matcher="startup")]}))
    await rig.session_start("startup")
    rig.agent.start_turn()
    decision = await rig.pre_step(prompt("hello"))
    assert isinstance(decision, Enter)
    context, first = decision.messages
    assert context == UserMessage(
        content=[TextBlock(text="repo uses uv")], source=PluginSource(plugin=f"hooks-{dialect}")
    )
    assert first == prompt("hello")
    # logged inside the turn it entered, once
    (invoked,) = rig.agent.events("hook/invoked")
    assert invoked["point"] == "SessionStart"
    assert invoked["turn"] == 1
    assert invoked["dialect"] == dialect
    assert invoked["matcher"] == "startup"
    (result,) = rig.agent.events("hook/result")
    assert result["handlerId"] == invoked["handlerId"]
    assert result["decision"] == "pass"
    assert result["exitCode"] == 0
    assert await rig.pre_step(prompt("again"), step=2) == Enter((prompt("again"),))


async def test_session_start_matcher_selects_the_source(tmp_path: Path) -> None:
    hook = script(tmp_path, "start.sh", "echo resumed\n")
    rig = Rig(config("codex", {"SessionStart": [group(hook, matcher="resume")]}))
    await rig.session_start("startup")
    rig.agent.start_turn()
    assert await rig.pre_step(prompt("hello")) == Enter((prompt("hello"),))
    assert rig.agent.events("hook/") == []


async def test_session_start_context_waits_for_a_step_with_messages(tmp_path: Path) -> None:
    hook = script(tmp_path, "start.sh", "echo ctx\n")
    rig = Rig(config("codex", {"SessionStart": [group(hook)]}))
    await rig.session_start("resume")
    rig.agent.start_turn()
    assert await rig.pre_step() == Enter(())  # nothing enters: no step would run
    decision = await rig.pre_step(prompt("hi"))
    assert isinstance(decision, Enter)
    assert len(decision.messages) == 2


async def test_session_start_context_survives_a_rejected_prompt(tmp_path: Path) -> None:
    start = script(tmp_path, "start.sh", "echo ctx\n")
    guard = script(tmp_path, "guard.sh", "grep -q bad && exit 2\nexit 0\n")
    rig = Rig(
        config(
            "claude-code",
            {"SessionStart": [group(start)], "UserPromptSubmit": [group(guard)]},
        )
    )
    await rig.session_start()
    rig.agent.start_turn()
    assert isinstance(await rig.pre_step(prompt("bad")), Reject)
    rig.agent.end_turn()
    rig.agent.start_turn()
    decision = await rig.pre_step(prompt("good"))
    assert isinstance(decision, Enter)
    assert [m.content[0].text for m in decision.messages] == ["ctx", "good"]  # type: ignore[union-attr]
    starts = [e for e in rig.agent.events("hook/invoked") if e["point"] == "SessionStart"]
    assert len(starts) == 1


async def test_aclose_cancels_a_running_session_start(tmp_path: Path) -> None:
    hook = script(tmp_path, "start.sh", "sleep 30\n")
    rig = Rig(config("codex", {"SessionStart": [group(hook)]}))
    await rig.session_start()
    await rig.runner.aclose()
    rig.agent.start_turn()
    assert await rig.pre_step(prompt("hi")) == Enter((prompt("hi"),))


# -- mounting ---------------------------------------------------------------------------------


async def test_install_registers_only_configured_events_and_the_disposer_withdraws(
    tmp_path: Path,
) -> None:
    from dsh_agent import Extensions
    from dsh_hooks import HookRunner
    from dsh_tools import ToolRegistry
    from support import BashExecutor

    runner = HookRunner(
        config("codex", {"PreToolUse": [group("exit 2")], "Stop": [group("true")]}),
        BashExecutor(),
    )
    extensions, tools = Extensions(), ToolRegistry()
    disposer = runner.install(extensions, tools)
    assert (len(extensions.session_start), len(extensions.pre_step)) == (0, 0)
    assert len(extensions.turn_stopping) == 1
    tools.register(Bash())
    assert (await tools.execute(call("ls"))).is_error
    disposer()
    assert len(extensions.turn_stopping) == 0
    assert not (await tools.execute(call("ls"))).is_error


class LowerBash(Bash):
    name = "bash"  # the built-in tool's real name


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_claude_code_tool_names_match_the_built_in_tools(
    tmp_path: Path, dialect: str
) -> None:
    """A pasted table's ``"Bash"`` matcher selects the built-in ``bash``; Claude Code payloads
    name it ``Bash`` (scripts test ``tool_name``), Codex payloads keep its real name."""
    hook = capture(tmp_path, "pre")
    rig = Rig(config(dialect, {"PreToolUse": [group(hook, matcher="Bash|Write")]}))
    rig.tools.register(LowerBash())
    await rig.tools.execute(ToolCall("c1", "bash", json.dumps({"command": "ls"})), rig.agent)
    assert read_json(tmp_path / "pre.json")["tool_name"] == (
        "Bash" if dialect == "claude-code" else "bash"
    )
    other = Rig(config(dialect, {"PreToolUse": [group(capture(tmp_path, "no"), matcher="Read")]}))
    other.tools.register(LowerBash())
    await other.tools.execute(ToolCall("c1", "bash", json.dumps({"command": "ls"})), other.agent)
    assert not (tmp_path / "no.json").exists()


async def test_codex_model_is_the_agents_own_unless_configured(tmp_path: Path) -> None:
    """FakeAgent runs on model "m": without [hooks] model every Codex payload says so."""
    table = {
        event: [group(capture(tmp_path, event))]
        for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
    }
    rig = Rig(config("codex", table), FakeAgent("sess-cx", cwd=str(tmp_path)))
    await run_all_events(rig)
    for event in table:
        assert read_json(tmp_path / f"{event}.json")["model"] == "m", event
