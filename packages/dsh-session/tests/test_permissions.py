"""``logged_permissions``: the one fold of a session's permission knobs."""

from __future__ import annotations

from dsh_session import LoggedPermissions, Session, SessionHeader, logged_permissions


def _session() -> Session:
    return Session(SessionHeader(id="s", created_at=1))


def test_a_session_that_logged_no_knob_has_none() -> None:
    assert logged_permissions(_session()) == LoggedPermissions(None, None, None)


def test_each_knob_is_the_last_one_logged_and_later_events_are_read() -> None:
    session = _session()
    session.append("permission/preset", {"preset": "workspace-write"})
    session.append("sandbox/mode", {"mode": "workspace-write"})
    session.append("approval/policy", {"policy": "ask"})
    assert logged_permissions(session) == LoggedPermissions(
        "workspace-write", "workspace-write", "ask"
    )
    session.append("sandbox/mode", {"mode": "read-only", "source": "delegation"})
    assert logged_permissions(session) == LoggedPermissions("workspace-write", "read-only", "ask")
    session.append("approval/policy", {"policy": "never"})
    assert logged_permissions(session).approval_policy == "never"


def test_a_value_that_is_not_a_string_reads_as_empty_so_no_vocabulary_holds_it() -> None:
    session = _session()
    session.append("sandbox/mode", {"mode": 3})
    session.append("approval/policy", {})
    assert logged_permissions(session) == LoggedPermissions(None, "", "")


def test_each_session_has_its_own_fold() -> None:
    first, second = _session(), _session()
    first.append("sandbox/mode", {"mode": "read-only"})
    assert logged_permissions(first).sandbox_mode == "read-only"
    assert logged_permissions(second).sandbox_mode is None


def test_a_restored_log_is_folded_from_its_first_event() -> None:
    session = _session()
    session.append("sandbox/mode", {"mode": "danger-full-access"})
    restored = Session(session.header, session.events)
    assert logged_permissions(restored).sandbox_mode == "danger-full-access"
