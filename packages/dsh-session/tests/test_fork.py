"""Fork seeds (reference §1.8): balanced cuts, the end-seed marker, inherited_event_count."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_session import (
    Session,
    SessionForkError,
    SessionHeader,
    decode_header_line,
    encode_header_line,
    fork_seed,
)

PARENT = SessionHeader(id="parent", created_at=1, cwd="/work", agent_preset="p")


def _two_turns(build: Any) -> Session:
    session = Session(PARENT)
    for turn in (1, 2):
        session.append("turn/start", {"turn": turn}, time=10 * turn)
        session.append("user/message", build.user_message(str(turn)), time=10 * turn + 1)
        session.append(
            "turn/end", {"turn": turn, "reason": {"kind": "completed"}}, time=10 * turn + 2
        )
    return session


def test_a_fork_at_a_balanced_point_seeds_the_child(build: Any) -> None:
    parent = _two_turns(build)
    child = parent.fork("child", boundary=2, created_at=99)
    assert child.header.is_seeded
    assert child.header.parent_session == "parent"
    assert child.header.cwd == "/work"
    assert child.inherited_event_count == 3
    assert list(child.events[:3]) == list(parent.events[:3])
    marker = child.events[3]
    assert (marker.type, marker.seq, marker.time, marker.data) == (
        "session/end-seed",
        3,
        12,
        {"inherited": True},
    )
    assert len(child.derive_messages()) == 1


def test_the_default_boundary_is_the_last_event(build: Any) -> None:
    child = _two_turns(build).fork("child")
    assert child.inherited_event_count == 6
    assert child.next_seq == 7


def test_the_cut_is_stored_as_seed_length_on_disk(build: Any) -> None:
    child = _two_turns(build).fork("child", boundary=2, created_at=5)
    line = encode_header_line(child.header, child.inherited_event_count)
    assert b'"parentSession":"parent","seedLength":3' in line
    assert decode_header_line(line) == (child.header, 3)


def test_a_boundary_inside_an_open_turn_is_refused_with_open_turn(build: Any) -> None:
    parent = _two_turns(build)
    for boundary in (0, 1, 3, 4):
        with pytest.raises(SessionForkError) as info:
            parent.fork("child", boundary=boundary)
        assert info.value.code == "OPEN_TURN"
        assert info.value.boundary == boundary


@pytest.mark.parametrize("boundary", [-1, 6, 100, "2", 2.0])
def test_a_boundary_that_is_not_a_seq_is_refused(build: Any, boundary: Any) -> None:
    with pytest.raises(SessionForkError) as info:
        _two_turns(build).fork("child", boundary=boundary)
    assert info.value.code == "INVALID_BOUNDARY"


def test_an_empty_parent_gives_an_empty_unseeded_child() -> None:
    child = Session(PARENT).fork("child")
    assert not child.header.is_seeded
    assert (child.inherited_event_count, child.next_seq) == (0, 0)
    assert fork_seed([]) == ([], 0)
    with pytest.raises(SessionForkError):
        fork_seed([], 0)


def test_events_before_any_turn_are_a_balanced_prefix(build: Any) -> None:
    session = Session(PARENT)
    session.append("permission/preset", {"preset": "x"})
    seed, inherited = fork_seed(list(session.events))
    assert inherited == 1
    assert [e.type for e in seed] == ["permission/preset", "session/end-seed"]
