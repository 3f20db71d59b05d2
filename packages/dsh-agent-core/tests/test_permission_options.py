"""``--sandbox`` and ``--approval``: one definition, the same on every command that starts
sessions, and the same words as the seams."""

from __future__ import annotations

import click
import pytest

from dsh_agent import APPROVAL_POLICIES
from dsh_agent_core.cli import cli
from dsh_agent_core.cli._permission_options import APPROVAL_CHOICES, sandbox_overrides
from dsh_shell import SANDBOX_MODES


def _choices(command: click.Command, name: str) -> tuple[str, ...]:
    option = next(p for p in command.params if p.name == name)
    assert isinstance(option.type, click.Choice)
    return tuple(option.type.choices)


@pytest.mark.parametrize("command", ["chat", "run", "acp"])
def test_every_session_command_offers_the_seams_words(command: str) -> None:
    found = cli.commands[command]
    assert _choices(found, "sandbox_mode") == SANDBOX_MODES
    assert _choices(found, "approval") == APPROVAL_POLICIES == APPROVAL_CHOICES


def test_the_override_holds_only_what_was_given() -> None:
    assert sandbox_overrides(None, None) == {}
    assert sandbox_overrides("read-only", None) == {"sandbox": {"mode": "read-only"}}
    assert sandbox_overrides(None, "never") == {"sandbox": {"approval": "never"}}
    both = {"sandbox": {"mode": "danger-full-access", "approval": "ask"}}
    assert sandbox_overrides("danger-full-access", "ask") == both
