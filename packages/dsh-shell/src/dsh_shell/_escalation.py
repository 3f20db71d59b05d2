"""The escalation vocabulary: how a tool call asks for a wider sandbox than its session's.

A tool under a sandbox offers two more parameters, given together: ``sandbox_permissions``
(one of `ESCALATIONS`: the ladder only widens) and ``justification`` (one sentence for the
person asked). Such a call needs approval, asked with `escalation_reason`; once granted, that
one call runs under the wider mode. Every tool that offers it (bash, the file tools) takes the
words, the checks and the texts from here.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

from dsh_shell._sandbox import SandboxMode, sandbox_widens

__all__ = [
    "ESCALATIONS",
    "ESCALATION_SCHEMA",
    "JUSTIFICATION_DESCRIPTION",
    "SANDBOX_PERMISSIONS_DESCRIPTION",
    "Escalation",
    "escalation_pair_problem",
    "escalation_reason",
    "not_widening_problem",
    "retry_wider_hint",
]

Escalation: TypeAlias = Literal["workspace-write", "danger-full-access"]
"""What ``sandbox_permissions`` may ask for (the ladder only widens)."""

ESCALATIONS: Final[tuple[Escalation, ...]] = ("workspace-write", "danger-full-access")
"""Every `Escalation`, narrowest first."""

ESCALATION_SCHEMA: Final[dict[str, Any]] = {"type": "string", "enum": list(ESCALATIONS)}
"""The JSON schema the model sees for ``sandbox_permissions`` (a string enum, no null)."""

SANDBOX_PERMISSIONS_DESCRIPTION: Final = "Wider sandbox for this call, only after a refusal."
"""The model-facing description of ``sandbox_permissions``."""

JUSTIFICATION_DESCRIPTION: Final = "One sentence for the user: why."
"""The model-facing description of ``justification``."""


def escalation_pair_problem(sandbox_permissions: object, justification: object) -> str | None:
    """What is wrong with the two parameters as given (they come together, and the
    justification says something), or ``None`` when they are fine (both absent included)."""
    both = "give both (a wider sandbox and one sentence why) or neither"
    if sandbox_permissions is not None and justification is None:
        return f"sandbox_permissions was given without justification: {both}"
    if justification is not None and sandbox_permissions is None:
        return f"justification was given without sandbox_permissions: {both}"
    if justification is not None and not str(justification).strip():
        return "justification must be a non-empty sentence"
    return None


def not_widening_problem(requested: Escalation, current: SandboxMode) -> str | None:
    """The argument problem of a request that does not widen ``current``, else ``None``."""
    if sandbox_widens(current, requested):
        return None
    return (
        f"invalid sandbox_permissions: {requested} does not widen the current sandbox mode "
        f"{current}; call without sandbox_permissions"
    )


def escalation_reason(requested: Escalation, justification: str | None) -> str:
    """The approval reason an escalated call is asked with."""
    return f"escalate sandbox to {requested}: {justification or ''}"


def retry_wider_hint(mode: SandboxMode, subject: str, again: str) -> str:
    """The hint after a refusal under ``mode``: "If the <subject> needs that access, retry
    <again> once with sandbox_permissions <a wider mode> and a one-sentence justification; …"."""
    wider = (
        '"danger-full-access"'
        if mode == "workspace-write"
        else '"workspace-write" or "danger-full-access"'
    )
    return (
        f"If the {subject} needs that access, retry {again} once with sandbox_permissions "
        f"{wider} and a one-sentence justification; the user is asked to approve it."
    )
