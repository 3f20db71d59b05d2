"""The configuration: both dialects' shapes are accepted, anything else is refused by name."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

import pytest
from pydantic import ValidationError

from dsh_hooks import MAX_HOOK_FILE_BYTES, HookFileError, HooksConfig, Matcher

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
        ({"PreToolUSE": [{"hooks": [{"command": "true"}]}]}, "did you mean 'PreToolUse'"),
        ({"PostToolUsed": [{"hooks": [{"command": "true"}]}]}, "did you mean 'PostToolUse'"),
        ({"Stop": [{"hooks": [{"command": "true", "shell": "zsh"}]}]}, "shell"),
        ({"Stop": [{"hooks": [{"command": "true"}], "when": "always"}]}, "when"),
        ({"Stop": [{"hooks": [{"type": "comand", "command": "x"}]}]}, "type"),
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


FULL_CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {"type": "command", "command": "./guard.sh", "statusMessage": "Checking"},
                    {"type": "http", "url": "http://127.0.0.1:9/hook"},
                ],
            },
            {"matcher": "Write", "hooks": [{"type": "prompt", "prompt": "Is this safe?"}]},
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
        "PreCompact": [{"matcher": "auto", "hooks": [{"type": "command", "command": "true"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "./bye.sh"}]}],
        "SubagentStop": [
            {
                "hooks": [
                    {"type": "command", "command": "./later.sh", "async": True},
                    {"type": "command", "command": "./now.sh", "async": False},
                ]
            }
        ],
    },
}


def test_a_full_claude_code_settings_file_loads_and_names_what_is_left_out() -> None:
    config = HooksConfig.from_document(
        {"hooks": FULL_CLAUDE_SETTINGS["hooks"]}, dialect="claude-code"
    )
    (group,) = config.hooks.groups("PreToolUse")  # the prompt-only group is gone
    assert [hook.command for hook in group.hooks] == ["./guard.sh"]
    assert group.hooks[0].status_message == "Checking"
    (stop,) = config.hooks.groups("SubagentStop")
    assert [hook.command for hook in stop.hooks] == ["./now.sh"]
    assert config.ignored == (
        "hooks.PreToolUse[0].hooks[1]: a 'http' handler, not a command (left out)",
        "hooks.PreToolUse[1].hooks[0]: a 'prompt' handler, not a command (left out)",
        "hooks.Notification: not an event dsh-hooks runs (left out)",
        "hooks.PreCompact: not an event dsh-hooks runs (left out)",
        "hooks.SessionEnd: not an event dsh-hooks runs (left out)",
        "hooks.SubagentStop[0].hooks[0]: an async command hook (left out)",
    )


def test_codex_has_no_subagent_events_so_they_are_left_out() -> None:
    table = {
        "SubagentStart": [{"hooks": [{"command": "true"}]}],
        "Stop": [{"hooks": [{"command": "true"}]}],
    }
    config = HooksConfig.from_document({"hooks": table}, dialect="codex")
    assert config.hooks.groups("SubagentStart") == ()
    assert len(config.hooks.groups("Stop")) == 1
    assert config.ignored == ("hooks.SubagentStart: not a codex event (left out)",)
    claude = HooksConfig.from_document({"hooks": table}, dialect="claude-code")
    assert len(claude.hooks.groups("SubagentStart")) == 1
    assert claude.ignored == ()


def test_the_runner_warns_about_each_left_out_entry(caplog: pytest.LogCaptureFixture) -> None:
    from dsh_hooks import HookRunner

    config = HooksConfig.from_document(
        {"hooks": {"SessionEnd": [{"hooks": [{"command": "true"}]}]}}, dialect="codex"
    )
    with caplog.at_level("WARNING", logger="dsh_hooks"):
        HookRunner(config, executor=None)  # type: ignore[arg-type]  # never run here
    assert [r.getMessage() for r in caplog.records] == [
        "hook configuration: hooks.SessionEnd: not an event dsh-hooks runs (left out)"
    ]


# -- the settings file: a regular file, bounded, never waited on ------------------------------


class _Unblocker:
    """Opens the write end of ``fifo`` if the code under test is still stuck on it after
    ``seconds`` (so a regression fails the test instead of hanging the run)."""

    def __init__(self, fifo: Path, seconds: float = 10.0) -> None:
        self.fifo = fifo
        self.fired = threading.Event()
        self.timer = threading.Timer(seconds, self._unblock)

    def _unblock(self) -> None:
        self.fired.set()
        with contextlib.suppress(OSError):  # nobody was waiting on it
            os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))

    def __enter__(self) -> _Unblocker:
        self.timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.timer.cancel()


def test_a_settings_file_that_is_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "hooks.json"
    os.mkfifo(fifo)
    with _Unblocker(fifo) as guard, pytest.raises(HookFileError, match="a FIFO") as refused:
        HooksConfig.load(fifo, dialect="codex")
    assert not guard.fired.is_set()
    assert refused.value.path == str(fifo)
    assert str(fifo) in str(refused.value)


@pytest.mark.parametrize(
    ("target", "what"),
    [("/dev/zero", "a character device"), ("DIR", "a directory")],
)
def test_a_settings_file_that_is_not_a_regular_file_is_refused_by_name(
    tmp_path: Path, target: str, what: str
) -> None:
    if target == "DIR":
        (tmp_path / "dir").mkdir()
        target = str(tmp_path / "dir")
    link = tmp_path / "settings.json"
    link.symlink_to(target)
    with pytest.raises(HookFileError, match=what) as refused:
        HooksConfig.load(link, dialect="claude-code")
    assert refused.value.path == str(link)


def test_a_settings_file_over_the_bound_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_text('{"hooks": {}}' + " " * MAX_HOOK_FILE_BYTES)
    with pytest.raises(HookFileError, match=f"over {MAX_HOOK_FILE_BYTES} bytes"):
        HooksConfig.load(path, dialect="codex")


def test_a_settings_file_reached_by_a_symlink_loads(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text(json.dumps(CLAUDE_SETTINGS))
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    config = HooksConfig.load(link, dialect="claude-code")
    assert len(config.hooks.groups("PreToolUse")) == 1


def test_a_settings_file_that_is_not_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_text("{not json")
    with pytest.raises(HookFileError, match="is not valid JSON") as refused:
        HooksConfig.load(path, dialect="codex")
    assert str(path) in str(refused.value)
