"""Every hook text that enters the model's context is bounded by the tool results' spill rule:
real bash hook scripts print 300,000 bytes on each path, and what enters is the head and the
tail within 50,000 bytes plus the path of a 0600 file in the session's spill folder holding
the whole text."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from dsh_agent import CancelCause, Enter, Reject
from dsh_hooks import HOOK_OUTPUT_MAX_BYTES
from dsh_llm import TextBlock, UserMessage
from dsh_tools import MAX_INLINE_BYTES, Allow, Deny, ResultSpill, ToolExecution
from support import FakeAgent, Rig, config, group, script
from test_events import Bash, call, prompt
from test_subagents import child

BIG = 300_000
WHOLE = "HEAD" + "x" * BIG + "TAIL"
"""What every loud hook says (the shell builds it the same way)."""

_BODY = f"BODY=\"HEAD$(head -c {BIG} /dev/zero | tr '\\0' x)TAIL\"\ncat >/dev/null\n"


def loud(tmp_path: Path, name: str, action: str) -> str:
    """A hook that reads its payload, then runs ``action`` with ``$BODY`` holding ``WHOLE``."""
    return script(tmp_path, name, _BODY + action + "\n")


def says(answer: dict[str, Any]) -> str:
    """The bash line printing ``answer`` as JSON with every ``"@"`` string replaced by
    ``$BODY``."""
    template = json.dumps(answer).replace("%", "%%").replace('"@"', '"%s"')
    count = template.count('"%s"')
    return f"printf '{template}' " + " ".join(['"$BODY"'] * count)


def blocks_with_stderr() -> str:
    return "printf '%s' \"$BODY\" >&2; exit 2"


def plain_stdout() -> str:
    return "printf '%s' \"$BODY\""


def spilled(text: str, spill_root: Path, *, copies: int = 1) -> Path:
    """Check ``text`` is the bounded form of a hook text (``copies`` times ``WHOLE``, joined)
    and return the spill file, checked whole and private."""
    assert len(text.encode()) <= MAX_INLINE_BYTES
    assert text.startswith("HEAD") or "HEAD" in text[:100]
    assert text.endswith("TAIL")
    found = re.search(r"the whole hook text is in (\S+) \(read or grep it there\)", text)
    assert found is not None, text[:200]
    path = Path(found.group(1))
    assert path.parent.parent == spill_root
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text(encoding="utf-8").count(WHOLE) == copies
    return path


def texts(blocks: list[Any]) -> list[str]:
    return [block.text for block in blocks if isinstance(block, TextBlock)]


def assert_log_bounded(agent: FakeAgent) -> None:
    """No ``hook/*`` event carries the hook's text beyond its short summary."""
    hooks = [e for e in agent.session.events if e.type.startswith("hook/")]
    assert hooks
    for event in hooks:
        assert len(json.dumps(event.data)) < 2_000


# -- PreToolUse -------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
async def test_a_pre_tool_use_exit_2_reason_is_bounded_and_spilled(
    tmp_path: Path, dialect: str
) -> None:
    hook = loud(tmp_path, "deny.sh", blocks_with_stderr())
    rig = Rig(config(dialect, {"PreToolUse": [group(hook)]}), spill=ResultSpill(tmp_path / "spill"))
    bash = Bash()
    rig.tools.register(bash)
    rig.agent.start_turn()
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert result.is_error
    assert bash.ran == []
    assert result.text.startswith("Error: HEAD")
    spilled(result.text.removeprefix("Error: "), tmp_path / "spill")
    assert_log_bounded(rig.agent)


@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
@pytest.mark.parametrize(
    "answer",
    [
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "@",
            }
        },
        {"decision": "block", "reason": "@"},
    ],
    ids=["permissionDecision", "decision-block"],
)
async def test_a_pre_tool_use_json_deny_reason_is_bounded_and_spilled(
    tmp_path: Path, dialect: str, answer: dict[str, Any]
) -> None:
    hook = loud(tmp_path, "deny.sh", says(answer))
    rig = Rig(config(dialect, {"PreToolUse": [group(hook)]}), spill=ResultSpill(tmp_path / "spill"))
    rig.tools.register(Bash())
    rig.agent.start_turn()
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert result.is_error
    spilled(result.text.removeprefix("Error: "), tmp_path / "spill")
    assert_log_bounded(rig.agent)


async def test_a_pre_tool_use_ask_reason_reaches_the_approver_bounded(tmp_path: Path) -> None:
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": "@",
        }
    }
    hook = loud(tmp_path, "ask.sh", says(answer))
    rig = Rig(
        config("claude-code", {"PreToolUse": [group(hook)]}),
        spill=ResultSpill(tmp_path / "spill"),
    )
    rig.tools.register(Bash())
    asked: list[str | None] = []

    async def approver(execution: ToolExecution, reason: str | None) -> Allow | Deny:
        asked.append(reason)
        return Deny("no")

    await rig.tools.execute(call("ls"), rig.agent, approver=approver)
    (reason,) = asked
    assert reason is not None
    spilled(reason, tmp_path / "spill")


async def test_a_stop_reason_refusing_a_call_and_cancelling_the_turn_is_bounded(
    tmp_path: Path,
) -> None:
    hook = loud(tmp_path, "halt.sh", says({"continue": False, "stopReason": "@"}))
    rig = Rig(
        config("claude-code", {"PreToolUse": [group(hook)]}),
        spill=ResultSpill(tmp_path / "spill"),
    )
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    spilled(result.text.removeprefix("Error: "), tmp_path / "spill")
    (cause,) = rig.agent.cancels
    assert isinstance(cause, CancelCause)
    assert cause.reason is not None
    spilled(cause.reason, tmp_path / "spill")


# -- PostToolUse ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "action",
    [blocks_with_stderr(), says({"decision": "block", "reason": "@"})],
    ids=["exit-2", "json-block"],
)
async def test_a_post_tool_use_block_reason_is_bounded_and_spilled(
    tmp_path: Path, action: str
) -> None:
    hook = loud(tmp_path, "post.sh", action)
    rig = Rig(
        config("claude-code", {"PostToolUse": [group(hook)]}),
        spill=ResultSpill(tmp_path / "spill"),
    )
    rig.tools.register(Bash())
    rig.agent.start_turn()
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert result.is_error
    first, added = texts(result.content)
    assert first == "ran ls"
    assert added.startswith("PostToolUse hook: HEAD")
    spilled(added, tmp_path / "spill")
    assert_log_bounded(rig.agent)


@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
async def test_post_tool_use_additional_context_is_bounded_and_spilled(
    tmp_path: Path, dialect: str
) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "@"}}
    hook = loud(tmp_path, "post.sh", says(answer))
    rig = Rig(
        config(dialect, {"PostToolUse": [group(hook)]}), spill=ResultSpill(tmp_path / "spill")
    )
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert not result.is_error
    first, added = texts(result.content)
    assert first == "ran ls"
    spilled(added, tmp_path / "spill")


async def test_a_post_tool_use_reason_and_context_together_stay_within_one_budget(
    tmp_path: Path,
) -> None:
    answer = {
        "decision": "block",
        "reason": "@",
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "@"},
    }
    hook = loud(tmp_path, "post.sh", says(answer))
    rig = Rig(
        config("claude-code", {"PostToolUse": [group(hook)]}),
        spill=ResultSpill(tmp_path / "spill"),
    )
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    first, added = texts(result.content)
    assert first == "ran ls"
    spilled(added, tmp_path / "spill", copies=2)


# -- SessionStart / SubagentStart -------------------------------------------------------------


@pytest.mark.parametrize(
    "action",
    [
        plain_stdout(),
        says({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "@"}}),
    ],
    ids=["plain-stdout", "additionalContext"],
)
@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
async def test_session_start_context_is_bounded_and_spilled(
    tmp_path: Path, action: str, dialect: str
) -> None:
    hook = loud(tmp_path, "start.sh", action)
    rig = Rig(
        config(dialect, {"SessionStart": [group(hook)]}), spill=ResultSpill(tmp_path / "spill")
    )
    await rig.session_start("startup")
    rig.agent.start_turn()
    decision = await rig.pre_step(prompt("hello"))
    assert isinstance(decision, Enter)
    context, entered = decision.messages
    assert entered == prompt("hello")
    (text,) = texts(list(context.content))
    spilled(text, tmp_path / "spill")
    assert_log_bounded(rig.agent)


async def test_subagent_start_context_is_bounded_and_spilled(tmp_path: Path) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "@"}}
    hook = loud(tmp_path, "start.sh", says(answer))
    rig = Rig(
        config("claude-code", {"SubagentStart": [group(hook)]}),
        child(tmp_path),
        spill=ResultSpill(tmp_path / "spill"),
    )
    await rig.session_start("startup")
    rig.agent.start_turn()
    decision = await rig.pre_step(prompt("review"))
    assert isinstance(decision, Enter)
    (text,) = texts(list(decision.messages[0].content))
    spilled(text, tmp_path / "spill")


async def test_the_contexts_of_two_session_start_hooks_stay_within_one_budget(
    tmp_path: Path,
) -> None:
    first = loud(tmp_path, "one.sh", plain_stdout())
    second = loud(tmp_path, "two.sh", plain_stdout())
    rig = Rig(
        config("claude-code", {"SessionStart": [group(first), group(second)]}),
        spill=ResultSpill(tmp_path / "spill"),
    )
    await rig.session_start("startup")
    rig.agent.start_turn()
    decision = await rig.pre_step(prompt("hello"))
    assert isinstance(decision, Enter)
    (text,) = texts(list(decision.messages[0].content))
    spilled(text, tmp_path / "spill", copies=2)


# -- UserPromptSubmit -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "action",
    [
        plain_stdout(),
        says(
            {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "@"}}
        ),
    ],
    ids=["plain-stdout", "additionalContext"],
)
async def test_user_prompt_submit_context_is_bounded_and_spilled(
    tmp_path: Path, action: str
) -> None:
    hook = loud(tmp_path, "prompt.sh", action)
    rig = Rig(
        config("codex", {"UserPromptSubmit": [group(hook)]}),
        spill=ResultSpill(tmp_path / "spill"),
    )
    rig.agent.start_turn()
    decision = await rig.pre_step(prompt("hello"))
    assert isinstance(decision, Enter)
    entered, context = decision.messages
    assert entered == prompt("hello")
    (text,) = texts(list(context.content))
    spilled(text, tmp_path / "spill")
    assert_log_bounded(rig.agent)


@pytest.mark.parametrize(
    "action",
    [blocks_with_stderr(), says({"decision": "block", "reason": "@"})],
    ids=["exit-2", "json-block"],
)
async def test_a_user_prompt_submit_block_reason_is_bounded_and_spilled(
    tmp_path: Path, action: str
) -> None:
    hook = loud(tmp_path, "prompt.sh", action)
    rig = Rig(
        config("claude-code", {"UserPromptSubmit": [group(hook)]}),
        spill=ResultSpill(tmp_path / "spill"),
    )
    rig.agent.start_turn()
    decision = await rig.pre_step(prompt("hello"))
    assert isinstance(decision, Reject)
    assert decision.reason is not None
    spilled(decision.reason, tmp_path / "spill")


# -- Stop / SubagentStop ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "action",
    [blocks_with_stderr(), says({"decision": "block", "reason": "@"})],
    ids=["exit-2", "json-block"],
)
@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
async def test_a_stop_block_reason_steering_the_agent_is_bounded_and_spilled(
    tmp_path: Path, action: str, dialect: str
) -> None:
    hook = loud(tmp_path, "stop.sh", action)
    rig = Rig(config(dialect, {"Stop": [group(hook)]}), spill=ResultSpill(tmp_path / "spill"))
    rig.agent.start_turn()
    await rig.turn_stopping()
    ((messages, target),) = rig.agent.sent
    assert target == "next-step"
    (message,) = messages
    assert isinstance(message, UserMessage)
    (text,) = texts(list(message.content))
    spilled(text, tmp_path / "spill")
    assert_log_bounded(rig.agent)


async def test_a_subagent_stop_block_reason_is_bounded_and_spilled(tmp_path: Path) -> None:
    hook = loud(tmp_path, "stop.sh", blocks_with_stderr())
    rig = Rig(
        config("claude-code", {"SubagentStop": [group(hook)]}),
        child(tmp_path),
        spill=ResultSpill(tmp_path / "spill"),
    )
    rig.agent.start_turn()
    await rig.turn_stopping()
    ((messages, _),) = rig.agent.sent
    (text,) = texts(list(messages[0].content))
    spilled(text, tmp_path / "spill")


# -- without a spill, and what is read into memory --------------------------------------------


async def test_a_runner_without_a_spill_still_bounds_into_a_private_folder(
    tmp_path: Path,
) -> None:
    hook = loud(tmp_path, "deny.sh", blocks_with_stderr())
    rig = Rig(config("claude-code", {"PreToolUse": [group(hook)]}))
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    root = rig.runner.spill.root
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    spilled(result.text.removeprefix("Error: "), root)


async def test_a_short_hook_text_enters_unchanged(tmp_path: Path) -> None:
    hook = script(tmp_path, "deny.sh", "cat >/dev/null; echo 'no rm' >&2; exit 2\n")
    rig = Rig(
        config("claude-code", {"PreToolUse": [group(hook)]}),
        spill=ResultSpill(tmp_path / "spill"),
    )
    rig.tools.register(Bash())
    result = await rig.tools.execute(call("ls"), rig.agent)
    assert result.text == "Error: no rm"
    assert not (tmp_path / "spill").exists()


async def test_a_hooks_stdout_is_read_within_the_hook_output_cap(tmp_path: Path) -> None:
    hook = script(tmp_path, "pass.sh", "cat >/dev/null\n")
    rig = Rig(config("codex", {"Stop": [group(hook)]}))
    rig.agent.start_turn()
    await rig.turn_stopping()
    (request,) = rig.executor.requests
    assert request.stdout_max_bytes == HOOK_OUTPUT_MAX_BYTES == 1024 * 1024
