"""A session's approval policy, read from its log: the last ``approval/policy`` it logged.

A view of the session seam's one permission fold (``dsh_session.logged_permissions``) in this
seam's vocabulary, for everyone who asks (the loop before each question, the composition when it
pins a session's permissions, a display). Fail closed: a logged value outside the vocabulary
reads as ``never`` (nothing may be approved).
"""

from __future__ import annotations

from dsh_agent._approval import APPROVAL_POLICIES, ApprovalPolicy
from dsh_session import Session, logged_permissions

__all__ = ["logged_approval_policy"]


def logged_approval_policy(session: Session) -> ApprovalPolicy | None:
    """The last ``approval/policy`` ``session`` logged (a value outside the vocabulary reads as
    ``never``), or ``None`` when it logged none."""
    policy = logged_permissions(session).approval_policy
    if policy is None:
        return None
    return next((word for word in APPROVAL_POLICIES if word == policy), "never")
