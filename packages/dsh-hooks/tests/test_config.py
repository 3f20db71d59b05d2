"""The configuration: both dialects' shapes are accepted, anything else is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from dsh_hooks import HooksConfig, Matcher

CLAUDE_SETTINGS = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash|Write",
                "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 30}],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "./stop.sh"}]}],
    }
}


def test_claude_code_settings_shape_is_read() -> None:
    config = HooksConfig.from_document(CLAUDE_SETTINGS, dialect="claude-code")
    (group,) = config.hooks.groups("PreToolUse")
    assert group.matcher == "Bash|Write"
    assert group.hooks[0].command == "./guard.sh"
    assert group.hooks[0].timeout == 30
    assert config.hooks.groups("Stop")[0].hooks[0].timeout is None
    assert config.default_timeout == 600


def test_codex_hooks_json_without_type_and_with_timeout_sec_is_read(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_text(
        json.dumps(
            {
                "hooks": {
                    "SessionStart": [
                        {"matcher": "startup", "hooks": [{"command": "echo hi", "timeoutSec": 5}]}
                    ]
                }
            }
        )
    )
    config = HooksConfig.load(path, dialect="codex", model="gpt-5")
    hook = config.hooks.groups("SessionStart")[0].hooks[0]
    assert (hook.type, hook.command, hook.timeout) == ("command", "echo hi", 5)
    assert config.model == "gpt-5"


def test_codex_bare_event_map_is_read() -> None:
    config = HooksConfig.from_document(
        {"Stop": [{"hooks": [{"command": "true"}]}]}, dialect="codex"
    )
    assert len(config.hooks.groups("Stop")) == 1


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ({"Notification": [{"hooks": [{"command": "true"}]}]}, "Notification"),
        ({"Stop": [{"hooks": [{"command": "true", "shell": "zsh"}]}]}, "shell"),
        ({"Stop": [{"hooks": [{"command": "true"}], "when": "always"}]}, "when"),
        ({"Stop": [{"hooks": [{"type": "prompt", "command": "x"}]}]}, "type"),
        ({"Stop": [{"hooks": []}]}, "hooks"),
        ({"Stop": [{"hooks": [{"command": ""}]}]}, "command"),
        ({"Stop": [{"hooks": [{"command": "true", "timeout": 0}]}]}, "timeout"),
    ],
)
def test_unknown_or_invalid_entries_are_refused_by_name(table: dict, named: str) -> None:
    with pytest.raises(ValidationError) as raised:
        HooksConfig.from_document({"hooks": table}, dialect="claude-code")
    assert named in str(raised.value)


def test_an_invalid_regex_matcher_is_refused() -> None:
    table = {"PreToolUse": [{"matcher": "Bash(", "hooks": [{"command": "true"}]}]}
    with pytest.raises(ValidationError, match="not a valid regex"):
        HooksConfig.from_document({"hooks": table}, dialect="codex")


def test_unknown_top_level_option_and_dialect_are_refused() -> None:
    with pytest.raises(ValidationError, match="colour"):
        HooksConfig.model_validate({"dialect": "codex", "colour": "blue"})
    with pytest.raises(ValidationError, match="dialect"):
        HooksConfig.model_validate({"dialect": "cursor"})


def test_env_may_not_name_managed_keys_and_dsh_env_only_managed_ones() -> None:
    with pytest.raises(ValidationError, match="DSH_HOME"):
        HooksConfig.model_validate({"dialect": "codex", "env": {"DSH_HOME": "/x"}})
    with pytest.raises(ValidationError, match="HOME"):
        HooksConfig.model_validate({"dialect": "codex", "dsh_env": {"HOME": "/x"}})
    config = HooksConfig.model_validate(
        {"dialect": "codex", "env": {"A": "1"}, "dsh_env": {"DSH_SESSION_ID": "s"}}
    )
    assert config.dsh_env == {"DSH_SESSION_ID": "s"}


def test_matchers_follow_claude_code_literal_and_regex_forms() -> None:
    exact = Matcher.compile("Bash|Write")
    assert exact.matches("Bash")
    assert exact.matches("Write")
    assert not exact.matches("BashOutput")
    regex = Matcher.compile("mcp__.*__read")
    assert regex.matches("mcp__fs__read")
    assert not regex.matches("Read")
    for everything in (None, "", "*"):
        assert Matcher.compile(everything).matches("anything")
