"""Permission presets and the per-session knobs, logged as format v0 logs them.

A session pins ``permission/preset {preset}``, ``sandbox/mode {mode}`` and ``approval/policy
{policy}`` at creation, before any turn (the harness's ``turn-tail-actions`` fixture, seqs
0–2); later changes append only the knobs whose values changed. A session's effective knobs are
its last logged ones, so a resumed session keeps its own whatever the configuration now says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from dsh_agent import APPROVAL_POLICIES, ApprovalPolicy
from dsh_session import Session
from dsh_shell import SANDBOX_MODES, SandboxMode

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


def preset_name(mode: SandboxMode, approval: ApprovalPolicy) -> str | None:
    """The preset whose bundle is exactly ``(mode, approval)``, or ``None`` (custom)."""
    for name, bundle in PERMISSION_PRESETS.items():
        if bundle == (mode, approval):
            return name
    return None


def sandbox_mode_of(value: str | None) -> SandboxMode | None:
    """``value`` as a sandbox mode (``None`` stays ``None``); anything else raises ValueError."""
    if value is None:
        return None
    for mode in SANDBOX_MODES:
        if value == mode:
            return mode
    raise ValueError(f"{value!r} is not a sandbox mode ({', '.join(SANDBOX_MODES)})")


def approval_of(value: str | None) -> ApprovalPolicy | None:
    """``value`` as an approval policy (``None`` stays ``None``); anything else raises."""
    if value is None:
        return None
    for policy in APPROVAL_POLICIES:
        if value == policy:
            return policy
    raise ValueError(f"{value!r} is not an approval policy ({', '.join(APPROVAL_POLICIES)})")


def _last(session: Session, event_type: str, key: str) -> Any:
    events = session.events
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type == event_type:
            data: Any = event.data
            return data.get(key) if isinstance(data, dict) else None
    return None


def logged_sandbox_mode(session: Session) -> SandboxMode | None:
    """The session's last ``sandbox/mode``; a value outside the vocabulary reads as the
    narrowest mode (fail closed); ``None`` when it logged none."""
    value = _last(session, "sandbox/mode", "mode")
    if value is None:
        return None
    for mode in SANDBOX_MODES:
        if value == mode:
            return mode
    return "read-only"


def logged_approval_policy(session: Session) -> ApprovalPolicy | None:
    """The session's last ``approval/policy`` (outside the vocabulary: ``never``), or ``None``."""
    value = _last(session, "approval/policy", "policy")
    if value is None:
        return None
    for policy in APPROVAL_POLICIES:
        if value == policy:
            return policy
    return "never"


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
    if preset is not None and _last(session, "permission/preset", "preset") != preset:
        session.append("permission/preset", {"preset": preset})
        appended += 1
    if logged_sandbox_mode(session) != mode:
        session.append("sandbox/mode", {"mode": mode, **source})
        appended += 1
    if logged_approval_policy(session) != approval:
        session.append("approval/policy", {"policy": approval, **source})
        appended += 1
    return appended
