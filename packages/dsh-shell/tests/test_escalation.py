"""The escalation vocabulary every confined tool shares."""

from __future__ import annotations

import pytest

from dsh_shell import (
    ESCALATION_SCHEMA,
    ESCALATIONS,
    SANDBOX_MODES,
    escalation_pair_problem,
    escalation_reason,
    not_widening_problem,
    retry_wider_hint,
)


def test_the_escalations_are_the_modes_above_read_only_and_the_schema_lists_them() -> None:
    assert SANDBOX_MODES[1:] == ESCALATIONS
    assert {"type": "string", "enum": list(ESCALATIONS)} == ESCALATION_SCHEMA


@pytest.mark.parametrize(
    ("permissions", "justification", "problem"),
    [
        (None, None, None),
        ("workspace-write", "to write the build", None),
        ("workspace-write", None, "sandbox_permissions was given without justification"),
        (None, "because", "justification was given without sandbox_permissions"),
        ("danger-full-access", "  ", "justification must be a non-empty sentence"),
    ],
)
def test_the_two_parameters_come_together(
    permissions: str | None, justification: str | None, problem: str | None
) -> None:
    found = escalation_pair_problem(permissions, justification)
    assert (found is None) == (problem is None)
    if problem is not None:
        assert found is not None
        assert found.startswith(problem)


def test_a_request_must_widen_the_current_mode() -> None:
    assert not_widening_problem("danger-full-access", "workspace-write") is None
    problem = not_widening_problem("workspace-write", "workspace-write")
    assert problem is not None
    assert "does not widen the current sandbox mode" in problem
    assert not_widening_problem("workspace-write", "danger-full-access") is not None


def test_the_reason_and_the_hint_name_the_modes() -> None:
    assert escalation_reason("danger-full-access", "tests") == (
        "escalate sandbox to danger-full-access: tests"
    )
    assert '"danger-full-access"' in retry_wider_hint("workspace-write", "call", "it")
    hint = retry_wider_hint("read-only", "command", "this exact command")
    assert hint.startswith("If the command needs that access, retry this exact command once")
    assert '"workspace-write" or "danger-full-access"' in hint
