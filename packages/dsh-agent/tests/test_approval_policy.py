"""``logged_approval_policy``: the one fold of a session's approval policy."""

from __future__ import annotations

from dsh_agent import logged_approval_policy
from dsh_session import Session, SessionHeader


def _session() -> Session:
    return Session(SessionHeader(id="s", created_at=1))


def test_a_session_that_logged_no_policy_has_none() -> None:
    session = _session()
    session.append("sandbox/mode", {"mode": "read-only"})
    assert logged_approval_policy(session) is None


def test_the_last_logged_policy_wins_and_later_appends_are_seen() -> None:
    session = _session()
    session.append("approval/policy", {"policy": "ask"})
    assert logged_approval_policy(session) == "ask"
    session.append("approval/policy", {"policy": "never"})
    assert logged_approval_policy(session) == "never"
    session.append("approval/policy", {"policy": "ask"})
    assert logged_approval_policy(session) == "ask"


def test_a_value_outside_the_vocabulary_fails_closed() -> None:
    session = _session()
    session.append("approval/policy", {"policy": "ask"})
    session.append("approval/policy", {"policy": "always"})
    assert logged_approval_policy(session) == "never"
    other = _session()
    other.append("approval/policy", "not an object")
    assert logged_approval_policy(other) == "never"
