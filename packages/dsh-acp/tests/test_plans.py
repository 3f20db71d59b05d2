"""The model's task list as the editor's plan: ``todo/write`` events become ``plan`` updates
(live as written, cleared by the next turn, only the standing one on replay)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from acp.schema import AgentPlanUpdate, ToolCallStart

from dsh_acp import PLAN_PRIORITY, UpdateTranslator, call_view


def _event(kind: str, data: Any) -> Any:
    """What the translator reads of an event: its type and data."""
    return SimpleNamespace(type=kind, seq=0, data=data)


def _write(*pairs: tuple[str, str]) -> Any:
    return _event("todo/write", {"todos": [{"content": c, "status": s} for c, s in pairs]})


TURN_START = _event("turn/start", {"turn": 2, "trigger": {"kind": "message"}})
TURN_END = _event("turn/end", {"turn": 1, "reason": {"kind": "completed"}})


def _entries(update: object) -> list[tuple[str, str, str]]:
    assert isinstance(update, AgentPlanUpdate)
    assert update.session_update == "plan"
    return [(e.content, e.status, e.priority) for e in update.entries]


def test_each_write_is_the_whole_plan_with_statuses_one_to_one() -> None:
    translator = UpdateTranslator("/work")
    first = translator.live(
        _write(("Read", "completed"), ("Fix", "in_progress"), ("Test", "pending"))
    )
    assert [_entries(u) for u in first] == [
        [
            ("Read", "completed", PLAN_PRIORITY),
            ("Fix", "in_progress", PLAN_PRIORITY),
            ("Test", "pending", PLAN_PRIORITY),
        ]
    ]
    second = translator.live(_write(("Read", "completed"), ("Fix", "completed")))
    assert [_entries(u) for u in second] == [
        [("Read", "completed", "medium"), ("Fix", "completed", "medium")]
    ]
    assert second[0].model_dump(by_alias=True, exclude_none=True) == {
        "sessionUpdate": "plan",
        "entries": [
            {"content": "Read", "priority": "medium", "status": "completed"},
            {"content": "Fix", "priority": "medium", "status": "completed"},
        ],
    }


def test_the_turn_end_keeps_the_plan_and_the_next_turn_start_clears_it() -> None:
    translator = UpdateTranslator("/work")
    assert translator.live(TURN_START) == []  # no plan shown: nothing to clear
    translator.live(_write(("Fix", "completed")))
    assert translator.live(TURN_END) == []
    [cleared] = translator.live(TURN_START)
    assert _entries(cleared) == []
    assert translator.live(TURN_START) == []  # cleared once


def test_an_emptied_list_clears_the_plan_and_a_write_of_another_shape_sends_nothing() -> None:
    translator = UpdateTranslator("/work")
    translator.live(_write(("Fix", "pending")))
    assert translator.live(_event("todo/write", {"todos": [{"content": "x", "status": "?"}]})) == []
    [emptied] = translator.live(_event("todo/write", {"todos": []}))
    assert _entries(emptied) == []


def test_replay_sends_only_the_standing_plan_after_the_conversation() -> None:
    call = {"turn": 1, "step": 1, "callId": "c1", "name": "todo_write", "arguments": "{}"}
    log = [
        TURN_START,
        _event("tool/call", call),
        _write(("Old", "in_progress")),
        _write(("Old", "completed"), ("New", "in_progress")),
        TURN_END,
    ]
    updates = UpdateTranslator("/work").replay(log)
    plans = [u for u in updates if isinstance(u, AgentPlanUpdate)]
    assert [_entries(u) for u in plans] == [
        [("Old", "completed", "medium"), ("New", "in_progress", "medium")]
    ]
    assert updates[-1] is plans[0]
    assert isinstance(updates[0], ToolCallStart)
    # a turn started since: no plan stands, none is sent
    again = UpdateTranslator("/work").replay([*log, TURN_START])
    assert not any(isinstance(u, AgentPlanUpdate) for u in again)


def test_a_todo_write_call_reads_as_planning() -> None:
    view = call_view("todo_write", '{"todos": []}', "/work")
    assert (view.kind, view.title) == ("think", "Update the plan")


def test_a_plan_from_a_log_written_elsewhere_is_sent_bounded() -> None:
    """The tool refuses long lists, but a log written by anything else may hold one."""
    from dsh_acp._plans import PLAN_ENTRIES, PLAN_ENTRY_CHARS

    translator = UpdateTranslator("/p")
    huge = [(f"task {n} " + "x" * 5000, "pending") for n in range(PLAN_ENTRIES + 50)]
    [update] = [u for u in translator.live(_write(*huge)) if isinstance(u, AgentPlanUpdate)]
    entries = _entries(update)
    assert len(entries) == PLAN_ENTRIES
    assert all(len(content) == PLAN_ENTRY_CHARS for content, _, _ in entries)
    assert entries[0][0].endswith("…")
