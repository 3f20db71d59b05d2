"""``todo_write`` in the composed harness: off in the terminal and ``dsh run`` unless ``[todo]
enabled = true``, on where the front end shows plans (``compose(shows_plans=True)``, as
``dsh acp`` does) unless ``enabled = false``; a scripted model's call lands in its log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh_agent_core import (
    Config,
    ConfigError,
    TodoItem,
    compose,
    load_config,
    standing_plan,
)
from dsh_agent_core._harness import BUILT_IN_TOOL_NAMES, DEFAULT_TOOL_NAMES
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_tool_todo import TodoWriteTool


def configured(home: Path, text: str = "") -> Config:
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


@pytest.mark.parametrize(
    ("text", "shows_plans", "offered"),
    [
        ("", False, False),
        ("", True, True),
        ("[todo]\nenabled = true\n", False, True),
        ("[todo]\nenabled = true\n", True, True),
        ("[todo]\nenabled = false\n", False, False),
        ("[todo]\nenabled = false\n", True, False),
    ],
    ids=[
        "terminal-default",
        "acp-default",
        "terminal-enabled",
        "acp-enabled",
        "terminal-disabled",
        "acp-disabled",
    ],
)
async def test_todo_write_is_offered_where_plans_are_shown_unless_the_config_says(
    tmp_path: Path, text: str, shows_plans: bool, offered: bool
) -> None:
    async with compose(configured(tmp_path, text), shows_plans=shows_plans) as harness:
        assert harness.offers_todo is offered
        expected = BUILT_IN_TOOL_NAMES if offered else DEFAULT_TOOL_NAMES
        assert tuple(harness.tool_names()) == expected


def test_the_default_set_is_every_built_in_tool_but_todo_write() -> None:
    assert (*DEFAULT_TOOL_NAMES, "todo_write") == BUILT_IN_TOOL_NAMES


@pytest.mark.parametrize(
    ("text", "parallel"), [("", True), ("allow_parallel_in_progress = false\n", False)]
)
async def test_the_parallel_choice_reaches_the_tool(
    tmp_path: Path, text: str, parallel: bool
) -> None:
    config = configured(tmp_path, f"[todo]\nenabled = true\n{text}")
    async with compose(config) as harness:
        tool = harness.loop().tools.get("todo_write")
        assert isinstance(tool, TodoWriteTool)
        assert tool.allow_parallel_in_progress is parallel


def test_a_todo_key_of_the_wrong_type_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"todo\.enabled"):
        configured(tmp_path, "[todo]\nenabled = [true]\n")
    with pytest.raises(ConfigError, match=r"todo\.plan"):
        configured(tmp_path, "[todo]\nplan = true\n")


def test_an_application_tool_named_todo_write_is_refused_even_while_it_is_off(
    tmp_path: Path,
) -> None:
    from dsh_agent_core import DshError

    with pytest.raises(DshError, match="tool 'todo_write' is offered twice"):
        compose(configured(tmp_path), tools=[TodoWriteTool(allow_parallel_in_progress=False)])


async def test_a_call_lands_in_the_session_log_between_its_call_and_result(tmp_path: Path) -> None:
    todos = [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix it", "status": "in_progress"},
    ]
    model = ScriptedModel(
        [
            tool_call_response(("c1", "todo_write", json.dumps({"todos": todos}))),
            text_response("Planned."),
        ]
    )
    config = configured(tmp_path, "[todo]\nenabled = true\n")
    async with compose(config, models={"scripted": model}) as harness:
        agent = await harness.create("Plan it", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        events = list(agent.session.events)
    kinds = [e.type for e in events]
    call = kinds.index("tool/call")
    assert kinds[call + 1 : call + 3] == ["todo/write", "tool/result"]
    assert events[call + 1].to_wire()["data"] == {"todos": todos}
    assert standing_plan(events) == [TodoItem.model_validate(t) for t in todos]
    # the model's history holds its call and the result, not the event
    request = model.requests[-1]
    assert "todo/write" not in json.dumps([m.to_wire() for m in request.messages])


def test_the_terminal_shows_a_plan_bounded_and_sanitized() -> None:
    """A log may hold any list (one written elsewhere): at most ten lines, each one short and
    with its controls shown, never interpreted."""
    import io

    from rich.console import Console

    from dsh_agent_core.cli._render import PLAN_LINES, MarkdownPrinter
    from dsh_session import make_event

    out = io.StringIO()
    printer = MarkdownPrinter(Console(file=out, width=400, color_system=None))
    todos = [{"content": "\x1b[31mred\x1b[0m " + "x" * 20_000, "status": "pending"}] * 12
    printer(make_event("todo/write", 0, 0, {"todos": todos}))
    lines = out.getvalue().splitlines()
    assert len(lines) == PLAN_LINES + 1  # the tenth line, then how many more
    assert lines[-1].strip() == "… (2 more)"
    assert all(len(line) <= 170 for line in lines)
    assert "\x1b" not in out.getvalue()
