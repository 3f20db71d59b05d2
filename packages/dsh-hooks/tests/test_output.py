"""Decoding what a hook said: exit codes, JSON answers, and the merge of several hooks."""

from __future__ import annotations

import json

from dsh_hooks import HookOutput, merge_outputs, parse_hook_output


def test_exit_2_blocks_with_stderr_as_the_reason_and_ignores_stdout() -> None:
    output = parse_hook_output("PreToolUse", 2, '{"decision":"approve"}', "  no rm  \n")
    assert (output.decision, output.reason) == ("block", "no rm")


def test_other_exit_codes_are_non_blocking_errors() -> None:
    output = parse_hook_output("Stop", 1, "", "boom", error="failed")
    assert output.failed
    assert output.decision is None
    assert output.logged_decision == "error"


def test_top_level_block_decision_with_reason() -> None:
    stdout = json.dumps({"decision": "block", "reason": "tests fail"})
    output = parse_hook_output("Stop", 0, stdout, "")
    assert (output.decision, output.reason) == ("block", "tests fail")


def test_permission_decision_wins_over_the_legacy_decision_for_pre_tool_use() -> None:
    stdout = json.dumps(
        {
            "decision": "approve",
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask",
                "permissionDecisionReason": "confirm",
            },
        }
    )
    output = parse_hook_output("PreToolUse", 0, stdout, "")
    assert (output.decision, output.reason) == ("ask", "confirm")


def test_a_specific_block_for_another_event_is_ignored() -> None:
    stdout = json.dumps({"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "x"}})
    assert parse_hook_output("SessionStart", 0, stdout, "").context is None


def test_plain_stdout_is_context_only_where_the_event_takes_it() -> None:
    assert (
        parse_hook_output("SessionStart", 0, "hi\n", "", plain_stdout_is_context=True).context
        == "hi"
    )
    assert parse_hook_output("PreToolUse", 0, "hi\n", "").context is None
    broken = parse_hook_output("UserPromptSubmit", 0, "{not json", "", plain_stdout_is_context=True)
    assert broken.context == "{not json"


def test_continue_false_stop_reason_system_message_and_updated_input() -> None:
    stdout = json.dumps(
        {
            "continue": False,
            "stopReason": "enough",
            "systemMessage": "note",
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"a": 1}},
        }
    )
    output = parse_hook_output("PreToolUse", 0, stdout, "")
    assert output.stop
    assert output.stop_reason == "enough"
    assert output.system_message == "note"
    assert output.updated_input == {"a": 1}
    assert output.logged_decision == "stop"


def test_merge_keeps_the_strictest_decision_and_its_reasons_and_every_context() -> None:
    merged = merge_outputs(
        [
            HookOutput(0, decision="allow", reason="fine"),
            HookOutput(2, decision="block", reason="first"),
            HookOutput(0, decision="ask", reason="maybe", context="c1"),
            HookOutput(0, decision="deny", reason="second", context="c2"),
        ]
    )
    assert merged.decision == "deny"
    assert merged.reason == "first\n\nsecond"
    assert merged.contexts == ("c1", "c2")
    assert merge_outputs([]).decision == "none"
