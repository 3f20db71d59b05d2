"""A session's permission knobs, folded from its log: the one fold everyone asks.

Format v0 logs three knobs: ``permission/preset {preset}``, ``sandbox/mode {mode}`` and
``approval/policy {policy}``. A session pins them at creation and appends only the ones that
change, so its effective knobs are the last of each it logged: a resumed session keeps its own
whatever the configuration says now. The fold is incremental (only the events appended since
the previous ask are read, a log being append-only), so asking before every call costs nothing
that grows with the log.

The values are given as the log holds them. Their vocabularies live with their meaning (the
sandbox modes in ``dsh-shell``, the approval policies in ``dsh-agent``), and each reader maps
a value outside its vocabulary to its own fail-closed reading. A knob logged with a value
that is not a string reads as ``""``, which no vocabulary holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from dsh_session._session import Session

__all__ = ["LoggedPermissions", "logged_permissions"]

_KNOBS = {
    "permission/preset": "preset",
    "sandbox/mode": "mode",
    "approval/policy": "policy",
}


@dataclass(frozen=True, slots=True)
class LoggedPermissions:
    """The last ``permission/preset``, ``sandbox/mode`` and ``approval/policy`` a session
    logged, as logged (``None``: it logged none of that knob; ``""``: it logged one whose value
    is not a string)."""

    preset: str | None = None
    sandbox_mode: str | None = None
    approval_policy: str | None = None


@dataclass(slots=True)
class _Fold:
    seen: int = 0
    knobs: LoggedPermissions = LoggedPermissions()


_FOLDS: WeakKeyDictionary[Session, _Fold] = WeakKeyDictionary()


def _value(data: object, key: str) -> str:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, str) else ""


def logged_permissions(session: Session) -> LoggedPermissions:
    """The permission knobs ``session`` logged last (see the module docs)."""
    fold = _FOLDS.get(session)
    if fold is None:
        fold = _FOLDS[session] = _Fold()
    events = session.events
    if len(events) < fold.seen:  # not the log this fold read: start again
        fold.seen, fold.knobs = 0, LoggedPermissions()
    preset, mode, policy = fold.knobs.preset, fold.knobs.sandbox_mode, fold.knobs.approval_policy
    for index in range(fold.seen, len(events)):
        event = events[index]
        key = _KNOBS.get(event.type)
        if key is None:
            continue
        value = _value(event.data, key)
        if key == "preset":
            preset = value
        elif key == "mode":
            mode = value
        else:
            policy = value
    fold.seen = len(events)
    if (preset, mode, policy) != (
        fold.knobs.preset,
        fold.knobs.sandbox_mode,
        fold.knobs.approval_policy,
    ):
        fold.knobs = LoggedPermissions(preset, mode, policy)
    return fold.knobs
