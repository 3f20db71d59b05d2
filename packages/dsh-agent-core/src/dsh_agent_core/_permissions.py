"""Permission presets and the per-session knobs, logged as format v0 logs them.

A session pins ``permission/preset {preset}``, ``sandbox/mode {mode}`` and ``approval/policy
{policy}`` at creation, before any turn (the harness's ``turn-tail-actions`` fixture, seqs
0–2); later changes append only the knobs whose values changed. A session's effective knobs are
its last logged ones, so a resumed session keeps its own whatever the configuration now says:
the one fold of them is the session seam's ``dsh_session.logged_permissions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, TypeVar

from dsh_agent import APPROVAL_POLICIES, ApprovalPolicy, logged_approval_policy
from dsh_session import Session, logged_permissions
from dsh_shell import SANDBOX_MODES, SandboxMode, sandbox_mode_from_log

__all__ = [
    "PERMISSION_PRESETS",
    "approval_of",
    "logged_approval_policy",
    "logged_sandbox_mode",
    "pin_permissions",
    "preset_name",
    "sandbox_mode_of",
]

PERMISSION_PRESETS: Final[Mapping[str, tuple[SandboxMode, ApprovalPolicy]]] = {
    "read-only": ("read-only", "ask"),
    "workspace-write": ("workspace-write", "ask"),
    "danger-full-access": ("danger-full-access", "never"),
}
"""The selectable presets: name → (sandbox mode, approval policy). Any other pair is
``custom``, which is derived, never selected, and never logged as a preset."""

T = TypeVar("T", bound=str)


def _member(value: object, vocabulary: tuple[T, ...]) -> T | None:
    """The word of ``vocabulary`` equal to ``value``, else ``None``."""
    for word in vocabulary:
        if value == word:
            return word
    return None


def preset_name(mode: SandboxMode, approval: ApprovalPolicy) -> str | None:
    """The preset whose bundle is exactly ``(mode, approval)``, or ``None`` (custom)."""
    for name, bundle in PERMISSION_PRESETS.items():
        if bundle == (mode, approval):
            return name
    return None


def sandbox_mode_of(value: str | None) -> SandboxMode | None:
    """``value`` as a sandbox mode (``None`` stays ``None``); anything else raises ValueError."""
    mode = _member(value, SANDBOX_MODES)
    if value is not None and mode is None:
        raise ValueError(f"{value!r} is not a sandbox mode ({', '.join(SANDBOX_MODES)})")
    return mode


def approval_of(value: str | None) -> ApprovalPolicy | None:
    """``value`` as an approval policy (``None`` stays ``None``); anything else raises."""
    policy = _member(value, APPROVAL_POLICIES)
    if value is not None and policy is None:
        raise ValueError(f"{value!r} is not an approval policy ({', '.join(APPROVAL_POLICIES)})")
    return policy


def logged_sandbox_mode(session: Session) -> SandboxMode | None:
    """The session's last ``sandbox/mode``; a value outside the vocabulary reads as the
    narrowest mode (fail closed); ``None`` when it logged none."""
    return sandbox_mode_from_log(logged_permissions(session).sandbox_mode)


def pin_permissions(
    session: Session,
    mode: SandboxMode,
    approval: ApprovalPolicy,
    *,
    delegated: bool = False,
) -> int:
    """Append the knob events whose values differ from what ``session`` logged: the preset
    (when the pair is one), then ``sandbox/mode``, then ``approval/policy``. ``delegated``
    marks the knobs a parent imposed on its child (``source: "delegation"``). Returns how many
    events were appended."""
    appended = 0
    source = {"source": "delegation"} if delegated else {}
    preset = preset_name(mode, approval)
    if preset is not None and logged_permissions(session).preset != preset:
        session.append("permission/preset", {"preset": preset})
        appended += 1
    if logged_sandbox_mode(session) != mode:
        session.append("sandbox/mode", {"mode": mode, **source})
        appended += 1
    if logged_approval_policy(session) != approval:
        session.append("approval/policy", {"policy": approval, **source})
        appended += 1
    return appended
