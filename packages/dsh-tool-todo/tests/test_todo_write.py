"""``todo_write`` through a real `ToolRegistry`: the schema the model sees, what is refused,
what is logged in the caller's session, and the standing-plan fold displays read."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_session import Session, SessionHeader, decode_event, encode_event, make_event
from dsh_tool_todo import (
    TODO_STATUSES,
    TodoItem,
    TodoWriteTool,
    fold_plan,
    standing_plan,
    todos_of,
)
from dsh_tools import ToolCall, ToolRegistry, ToolResult

settings.register_profile("todo", deadline=None)
settings.load_profile("todo")


@dataclass
class Caller:
    """The agent a call runs for (a `dsh_tools.ToolCaller`): a real in-memory session."""

    session: Session = field(default_factory=lambda: Session(SessionHeader(id="s", created_at=1)))
    cwd: str | None = None


def registry(*, parallel: bool = False) -> ToolRegistry:
    tools = ToolRegistry()
    tools.register(TodoWriteTool(allow_parallel_in_progress=parallel))
    return tools


async def write(
    tools: ToolRegistry, todos: Any, caller: Caller | None, call_id: str = "c1"
) -> ToolResult:
    return await tools.execute(
        ToolCall(call_id, "todo_write", json.dumps({"todos": todos})), caller
    )


def items(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"content": content, "status": status} for content, status in pairs]


# -- the schema ------------------------------------------------------------------------------


def test_the_schema_is_one_required_array_of_content_and_status_objects() -> None:
    schema = TodoWriteTool(allow_parallel_in_progress=False).schema()
    assert schema.name == "todo_write"
    params = schema.parameters
    assert params["required"] == ["todos"]
    assert params["additionalProperties"] is False
    todos: Any = params["properties"]
    item = todos["todos"]["items"]
    assert todos["todos"]["type"] == "array"
    assert item["required"] == ["content", "status"]
    assert item["additionalProperties"] is False
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert list(TODO_STATUSES) == item["properties"]["status"]["enum"]
    text = json.dumps(schema.to_wire(), separators=(",", ":"))
    assert "$defs" not in text
    assert "$ref" not in text
    assert '"title"' not in text
    assert len(text) < 900, f"{len(text)} characters"


def test_the_description_states_the_rule_the_tool_enforces() -> None:
    single = TodoWriteTool(allow_parallel_in_progress=False).description
    parallel = TodoWriteTool(allow_parallel_in_progress=True).description
    assert "exactly one item in_progress" in single
    assert "several" in parallel
    assert "exactly one" not in parallel
    assert "WHOLE list" in single
    assert "WHOLE list" in parallel


# -- what is logged ----------------------------------------------------------------------------


async def test_a_call_appends_todo_write_with_the_list_and_answers_with_counts() -> None:
    caller = Caller()
    todos = items(("Read the code", "completed"), ("Fix it", "in_progress"), ("Test", "pending"))
    result = await write(registry(), todos, caller)
    assert not result.is_error
    assert result.text == ("Task list updated: 3 tasks (1 completed, 1 in progress, 1 pending).")
    [event] = caller.session.events
    assert event.type == "todo/write"
    assert event.to_wire()["data"] == {"todos": todos}
    # the wire form the TypeScript harness writes: key order content, status; no surfaceOp
    line = encode_event(event).decode()
    assert '"data":{"todos":[{"content":"Read the code","status":"completed"},' in line
    assert "surfaceOp" not in line
    assert caller.session.surface == ()
    assert caller.session.derive_messages() == []


async def test_the_next_call_replaces_the_whole_list() -> None:
    caller = Caller()
    tools = registry()
    await write(tools, items(("A", "in_progress"), ("B", "pending")), caller)
    await write(tools, items(("A", "completed"), ("B", "in_progress")), caller, "c2")
    assert [e.type for e in caller.session.events] == ["todo/write", "todo/write"]
    assert standing_plan(caller.session.events) == [
        TodoItem(content="A", status="completed"),
        TodoItem(content="B", status="in_progress"),
    ]


async def test_content_is_logged_trimmed_and_an_empty_list_is_a_cleared_plan() -> None:
    caller = Caller()
    tools = registry()
    await write(tools, items(("  Fix the parser \n", "pending")), caller)
    assert todos_of(caller.session.events[-1]) == [
        TodoItem(content="Fix the parser", status="pending")
    ]
    result = await write(tools, [], caller, "c2")
    assert result.text == "Task list updated: 0 tasks (0 completed, 0 in progress, 0 pending)."
    assert standing_plan(caller.session.events) == []


# -- what is refused ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("todos", "says"),
    [
        (items(("ok", "pending"), ("", "pending")), "todos[1].content is empty"),
        (items((" \t\n", "pending")), "todos[0].content is empty"),
        (items(("Fix", "pending"), (" Fix ", "completed")), "todos[1].content 'Fix' repeats"),
        (
            items(("A", "in_progress"), ("B", "in_progress")),
            "2 tasks are in_progress ('A', 'B'); at most one may be",
        ),
        (items(("\ufeff", "pending")), "todos[0].content is empty"),
        (items(("Fix", "pending"), ("\ufeffFix", "pending")), "todos[1].content 'Fix' repeats"),
        (items(*[(f"task {n}", "pending") for n in range(101)]), "at most 100"),
        (items(("x" * 1001, "pending")), "todos[0].content is 1001 characters"),
    ],
    ids=[
        "empty",
        "blank",
        "duplicate-after-trim",
        "two-in-progress",
        "bom-only",  # JavaScript's trim() removes U+FEFF, so the TypeScript reader would refuse
        "duplicate-after-bom-trim",
        "too-many",
        "too-long",
    ],
)
async def test_a_refused_list_is_an_error_result_naming_the_item_and_logs_nothing(
    todos: Any, says: str
) -> None:
    caller = Caller()
    result = await write(registry(), todos, caller)
    assert result.is_error
    assert result.error is not None
    assert (result.error.name, result.error.code) == ("InvalidTodosError", "INVALID_TODOS")
    assert says in result.text
    assert result.text.startswith("Error: ")
    assert len(caller.session.events) == 0


async def test_several_in_progress_are_accepted_when_the_tool_allows_parallel_work() -> None:
    caller = Caller()
    todos = items(("Build", "in_progress"), ("Watch the tests", "in_progress"), ("Ship", "pending"))
    result = await write(registry(parallel=True), todos, caller)
    assert not result.is_error
    assert todos_of(caller.session.events[-1]) == [TodoItem.model_validate(t) for t in todos]


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"todos": [{"content": "A", "status": "done"}]}, "todos.0.status"),
        ({"todos": [{"content": "A", "status": "pending", "id": 1}]}, "todos.0.id"),
        ({"todos": [{"status": "pending"}]}, "todos.0.content"),
        ({"todos": [{"content": 7, "status": "pending"}]}, "todos.0.content"),
        ({}, "todos: field required"),
        ({"todos": [], "merge": True}, "merge"),
    ],
    ids=["unknown-status", "extra-key", "no-content", "content-not-text", "no-todos", "extra-arg"],
)
async def test_arguments_outside_the_schema_are_invalid_args(
    arguments: dict[str, Any], says: str
) -> None:
    caller = Caller()
    call = ToolCall("c1", "todo_write", json.dumps(arguments))
    result = await registry().execute(call, caller)
    assert result.is_error
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert says in result.text
    assert len(caller.session.events) == 0


async def test_a_call_without_a_calling_agent_is_refused() -> None:
    result = await write(registry(), items(("A", "pending")), None)
    assert result.is_error
    assert result.error is not None
    assert (result.error.name, result.error.code) == ("NoOwningSessionError", "NO_OWNING_SESSION")
    assert "has no calling agent" in result.text


def test_the_tool_never_runs_beside_other_calls() -> None:
    call = ToolCall("c1", "todo_write", json.dumps({"todos": []}))
    assert registry().is_concurrency_safe(call) is False


# -- the standing plan -------------------------------------------------------------------------


def _event(type: str, data: Any, seq: int = 0) -> Any:
    return make_event(type, seq, 1, data)


TURN_START = {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}}
TURN_END = {"turn": 1, "reason": {"kind": "completed"}}


def test_a_turn_start_clears_the_plan_and_a_turn_end_keeps_it() -> None:
    write_a = _event("todo/write", {"todos": items(("A", "completed"))})
    end = _event("turn/end", TURN_END)
    start = _event("turn/start", TURN_START)
    a = [TodoItem(content="A", status="completed")]
    assert standing_plan([]) is None
    assert standing_plan([write_a]) == a
    assert standing_plan([write_a, end]) == a
    assert standing_plan([write_a, end, start]) is None
    assert standing_plan([start, write_a]) == a
    assert fold_plan(a, start) is None


def test_a_todo_write_of_another_shape_is_skipped() -> None:
    good = _event("todo/write", {"todos": items(("A", "pending"))})
    a = [TodoItem(content="A", status="pending")]
    for data in (
        {"todos": [{"content": "B", "status": "blocked"}]},
        {"todos": ["B"]},
        {"todos": {"content": "B"}},
        {"list": []},
        ["B"],
    ):
        odd = _event("todo/write", data)
        assert todos_of(odd) is None, data
        assert standing_plan([good, odd]) == a, data


def test_a_line_in_the_typescript_harness_shape_reads_back() -> None:
    line = (
        '{"type":"todo/write","seq":7,"time":1785987090000,"data":{"todos":['
        '{"content":"read the code","status":"in_progress"},'
        '{"content":"write the fix","status":"pending"}]}}'
    )
    event = decode_event(line)
    assert encode_event(event).decode() == line
    assert todos_of(event) == [
        TodoItem(content="read the code", status="in_progress"),
        TodoItem(content="write the fix", status="pending"),
    ]


_STEPS = st.lists(
    st.one_of(
        st.just(("turn/start", None)),
        st.just(("turn/end", None)),
        st.lists(st.sampled_from(TODO_STATUSES), max_size=4).map(lambda s: ("todo/write", s)),
    ),
    max_size=12,
)


@given(_STEPS)
def test_the_standing_plan_is_the_last_write_after_the_last_turn_start(steps: Any) -> None:
    events = []
    for seq, (kind, statuses) in enumerate(steps):
        if kind == "todo/write":
            data: Any = {
                "todos": [{"content": f"t{i}", "status": s} for i, s in enumerate(statuses)]
            }
        elif kind == "turn/start":
            data = TURN_START
        else:
            data = TURN_END
        events.append(_event(kind, data, seq))
    last_start = max((i for i, e in enumerate(events) if e.type == "turn/start"), default=-1)
    writes = [e for e in events[last_start + 1 :] if e.type == "todo/write"]
    expected = todos_of(writes[-1]) if writes else None
    assert standing_plan(events) == expected
