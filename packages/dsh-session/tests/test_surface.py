"""The surface (reference §1.5): append, replace and their rules, plan-then-commit."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_session import (
    EventDecodeError,
    Session,
    SessionHeader,
    SessionValidationError,
    SurfaceReplace,
    fold_surface,
    make_event,
)

HEADER = SessionHeader(id="s", created_at=1)


def _with_nodes(build: Any, count: int) -> Session:
    session = Session(HEADER)
    for index in range(count):
        session.append("user/message", build.user_message(f"m{index}"))
    return session


def test_append_pushes_the_seq_and_log_only_events_stay_off(build: Any) -> None:
    session = Session(HEADER)
    session.append("turn/start", {"turn": 1})
    session.append("user/message", build.user_message())
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("assistant/message", build.assistant_message())
    assert session.surface == (1, 3)


def test_replace_splices_the_inclusive_range_and_counts_a_generation(build: Any) -> None:
    session = _with_nodes(build, 4)
    event = session.append(
        "user/message",
        build.user_message("summary"),
        surface_op=SurfaceReplace(1, 2),
        source_event_seqs=[1, 2],
    )
    assert session.surface == (0, event.seq, 3)
    assert session.replace_generation == 1
    assert event.surface_op == SurfaceReplace(1, 2)


def test_replace_start_and_end_are_seqs_not_positions(build: Any) -> None:
    session = _with_nodes(build, 3)
    session.append(
        "user/message",
        build.user_message(),
        surface_op=SurfaceReplace(0, 1),
        source_event_seqs=[0, 1],
    )
    # positions shifted: seq 2 is now at position 1, but it is still named by its seq
    session.append(
        "user/message", build.user_message(), surface_op=SurfaceReplace(2, 2), source_event_seqs=[2]
    )
    assert session.surface == (3, 4)


@pytest.mark.parametrize(
    ("op", "sources", "reason"),
    [
        (SurfaceReplace(7, 7), [0], "not a surface node"),
        (SurfaceReplace(2, 1), [1, 2], "comes after"),
        (SurfaceReplace(1, 2), [1], "cite every shadowed node"),
        (SurfaceReplace(1, 2), None, "cite every shadowed node"),
        ({"op": "replace", "start": 1, "end": 1, "x": 0}, [1], "surfaceOp"),
        ("prepend", None, "surfaceOp"),
    ],
)
def test_bad_replaces_are_refused_and_change_nothing(
    build: Any, op: Any, sources: list[int] | None, reason: str
) -> None:
    session = _with_nodes(build, 3)
    with pytest.raises(SessionValidationError, match=reason):
        session.append(
            "user/message", build.user_message(), surface_op=op, source_event_seqs=sources
        )
    assert session.surface == (0, 1, 2)
    assert session.next_seq == 3
    assert session.replace_generation == 0


def test_a_log_only_seq_is_not_a_replace_target(build: Any) -> None:
    session = Session(HEADER)
    session.append("turn/start", {"turn": 1})
    session.append("user/message", build.user_message())
    with pytest.raises(SessionValidationError, match="not a surface node"):
        session.append(
            "user/message",
            build.user_message(),
            surface_op=SurfaceReplace(0, 1),
            source_event_seqs=[0, 1],
        )


def test_a_surface_event_must_carry_surface_op() -> None:
    with pytest.raises(EventDecodeError, match="must carry surfaceOp"):
        make_event("user/message", 0, 0, {"content": []})
    assert fold_surface([]).nodes == ()


@pytest.mark.parametrize(
    ("sources", "reason"),
    [
        ([3], "not before this event"),
        ([0, 0], "duplicates"),
        ([], "empty sourceEventSeqs"),
    ],
)
def test_source_event_seqs_rules(build: Any, sources: list[int], reason: str) -> None:
    session = _with_nodes(build, 2)
    with pytest.raises(SessionValidationError, match=reason):
        session.append("user/message", build.user_message(), source_event_seqs=sources)


def test_an_empty_source_list_is_allowed_on_assistant_message(build: Any) -> None:
    session = Session(HEADER)
    event = session.append("assistant/message", build.assistant_message(), source_event_seqs=[])
    assert event.source_event_seqs == ()


def _tool_round(build: Any) -> Session:
    session = Session(HEADER)
    session.append("assistant/message", build.assistant_message("c1"))
    session.append("tool/result", build.tool_result("c1", "long output"))
    return session


def test_a_tool_result_replace_may_change_only_the_content(build: Any) -> None:
    session = _tool_round(build)
    event = session.append(
        "tool/result",
        build.tool_result("c1", "[pruned]"),
        surface_op=SurfaceReplace(1, 1),
        source_event_seqs=[1],
    )
    assert session.surface == (0, event.seq)


def test_a_tool_result_replace_of_the_message_shape_may_change_only_the_content(
    build: Any,
) -> None:
    def data(text: str) -> dict[str, Any]:
        block = {
            "type": "tool-result",
            "toolCallId": "c1",
            "content": [{"type": "text", "text": text}],
        }
        return {
            "turn": 1,
            "step": 1,
            "message": {
                "source": {"kind": "tool", "callId": "c1"},
                "content": [block],
                "role": "user",
                "id": "r",
            },
        }

    session = Session(HEADER)
    session.append("tool/result", data("long"))
    session.append(
        "tool/result", data("short"), surface_op=SurfaceReplace(0, 0), source_event_seqs=[0]
    )
    changed = data("short")
    changed["message"]["id"] = "other"
    with pytest.raises(SessionValidationError, match="only the result content"):
        session.append(
            "tool/result", changed, surface_op=SurfaceReplace(1, 1), source_event_seqs=[1]
        )


@pytest.mark.parametrize("field", ["callId", "isError", "step"])
def test_a_tool_result_replace_that_changes_more_than_content_is_refused(
    build: Any, field: str
) -> None:
    session = _tool_round(build)
    data = build.tool_result("c1", "[pruned]")
    data[field] = {"callId": "c2", "isError": True, "step": 2}[field]
    with pytest.raises(SessionValidationError, match="only the result content"):
        session.append("tool/result", data, surface_op=SurfaceReplace(1, 1), source_event_seqs=[1])


def test_a_tool_result_replace_must_shadow_exactly_one_tool_result(build: Any) -> None:
    session = _tool_round(build)
    with pytest.raises(SessionValidationError, match="exactly one tool/result"):
        session.append(
            "tool/result",
            build.tool_result("c1"),
            surface_op=SurfaceReplace(0, 1),
            source_event_seqs=[0, 1],
        )
    with pytest.raises(SessionValidationError, match="exactly one tool/result"):
        session.append(
            "tool/result",
            build.tool_result("c1"),
            surface_op=SurfaceReplace(0, 0),
            source_event_seqs=[0],
        )


def test_fold_surface_reports_every_replacement(build: Any) -> None:
    session = _with_nodes(build, 3)
    session.append(
        "user/message",
        build.user_message(),
        surface_op=SurfaceReplace(0, 1),
        source_event_seqs=[0, 1],
    )
    fold = fold_surface(list(session.events))
    assert fold.nodes == session.surface
    assert [(r.seq, r.start, r.end, r.shadowed_seqs) for r in fold.replacements] == [
        (3, 0, 1, (0, 1))
    ]


def _naive_fold(ops: list[tuple[str, int, int]]) -> list[int]:
    nodes: list[int] = []
    for seq, (kind, a, b) in enumerate(ops):
        if kind == "log":
            continue
        if kind == "append":
            nodes.append(seq)
        else:
            i, j = nodes.index(a), nodes.index(b)
            nodes[i : j + 1] = [seq]
    return nodes


@st.composite
def surface_scripts(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    ops: list[tuple[str, int, int]] = []
    nodes: list[int] = []
    for seq in range(draw(st.integers(0, 25))):
        choices = ["append", "log"] + (["replace"] if nodes else [])
        kind = draw(st.sampled_from(choices))
        if kind == "replace":
            i = draw(st.integers(0, len(nodes) - 1))
            j = draw(st.integers(i, len(nodes) - 1))
            ops.append((kind, nodes[i], nodes[j]))
            nodes[i : j + 1] = [seq]
        else:
            ops.append((kind, 0, 0))
            if kind == "append":
                nodes.append(seq)
    return ops


@given(surface_scripts())
def test_the_incremental_surface_equals_a_naive_fold(ops: list[tuple[str, int, int]]) -> None:
    session = Session(HEADER)
    message = {"content": [{"type": "text", "text": "x"}], "source": {"kind": "user"}}
    for kind, start, end in ops:
        if kind == "log":
            session.append("todo/write", {"todos": []})
        elif kind == "append":
            session.append("user/message", message)
        else:
            shadowed = list(session.surface)
            i, j = shadowed.index(start), shadowed.index(end)
            session.append(
                "user/message",
                message,
                surface_op=SurfaceReplace(start, end),
                source_event_seqs=shadowed[i : j + 1],
            )
    assert list(session.surface) == _naive_fold(ops)
    assert fold_surface(list(session.events)).nodes == session.surface
    assert len(session.derive_messages()) == len(session.surface)


def test_fold_surface_refuses_a_log_whose_seqs_are_not_indexes(build: Any) -> None:
    event = make_event("user/message", 1, 0, build.user_message(), surface_op="append")
    with pytest.raises(SessionValidationError) as info:
        fold_surface([event])
    assert info.value.code == "SEQ"


def test_an_unknown_type_with_surface_fields_decodes_but_a_session_refuses_it() -> None:
    event = make_event("future/surface", 0, 0, {}, surface_op="append")
    assert event.surface_op == "append"
    with pytest.raises(SessionValidationError) as info:
        Session(HEADER, [event])
    assert info.value.code == "ENVELOPE"


def test_surface_predicates_tell_append_from_replacement(build: Any) -> None:
    from dsh_session import (
        is_append_surface_event,
        is_replacement_surface_event,
        is_surface_event,
    )

    session = _with_nodes(build, 1)
    replaced = session.append(
        "user/message", build.user_message(), surface_op=SurfaceReplace(0, 0), source_event_seqs=[0]
    )
    log_only = session.append("turn/start", {"turn": 1})
    appended = session.events[0]
    assert [is_surface_event(e) for e in (appended, replaced, log_only)] == [True, True, False]
    assert [is_append_surface_event(e) for e in (appended, replaced, log_only)] == [
        True,
        False,
        False,
    ]
    assert [is_replacement_surface_event(e) for e in (appended, replaced, log_only)] == [
        False,
        True,
        False,
    ]
