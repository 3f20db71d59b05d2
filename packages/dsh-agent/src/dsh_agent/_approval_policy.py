"""A session's approval policy, folded from its log: the last ``approval/policy`` it logged.

One fold for everyone who asks (the loop before each question, the composition when it pins a
session's permissions, a display): incremental, so asking on every call costs nothing that
grows with the log, and fail closed (a logged value outside the vocabulary reads as ``never``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from dsh_agent._approval import APPROVAL_POLICIES, ApprovalPolicy
from dsh_session import Session

__all__ = ["logged_approval_policy"]


@dataclass(slots=True)
class _Fold:
    seen: int = 0
    policy: ApprovalPolicy | None = None


_FOLDS: WeakKeyDictionary[Session, _Fold] = WeakKeyDictionary()


def logged_approval_policy(session: Session) -> ApprovalPolicy | None:
    """The last ``approval/policy`` ``session`` logged (a value outside the vocabulary reads as
    ``never``), or ``None`` when it logged none. Only events appended since the previous call
    are read (a log is append-only)."""
    fold = _FOLDS.get(session)
    if fold is None:
        fold = _FOLDS[session] = _Fold()
    events = session.events
    if len(events) < fold.seen:  # not the log this fold read: start again
        fold.seen, fold.policy = 0, None
    for index in range(fold.seen, len(events)):
        event = events[index]
        if event.type == "approval/policy":
            data: Any = event.data
            policy = data.get("policy") if isinstance(data, dict) else None
            fold.policy = next((p for p in APPROVAL_POLICIES if p == policy), "never")
    fold.seen = len(events)
    return fold.policy
