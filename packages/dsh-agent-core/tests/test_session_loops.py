"""A session given tools of its own runs in a loop of its own: refused before anything is
built when it cannot start, and never in place of a session that is open already."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from dsh_agent_core import Config, DshError, compose, load_config
from dsh_llm.testing import ScriptedModel, text_response
from dsh_tools import ToolDefinition, ToolExecution


class _Nothing(BaseModel):
    pass


class _Ping(ToolDefinition[_Nothing]):
    name = "ping"
    description = "Answer pong."
    parameters = _Nothing

    async def execute(self, args: _Nothing, execution: ToolExecution) -> str:
        return "pong"


def _config(home: Path) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("")
    return load_config(env={"DSH_HOME": str(home)})


async def test_a_refused_create_leaves_no_loop_behind(tmp_path: Path) -> None:
    model = ScriptedModel([text_response("ok")])
    async with compose(_config(tmp_path / "home"), models={"scripted": model}) as harness:
        for _ in range(3):  # a route that does not resolve: refused before any loop is built
            with pytest.raises(DshError):  # (a provider alone, and scripted serves no list)
                await harness.create(model="scripted", cwd=tmp_path, tools=[_Ping()])
        assert harness._loops._session_loops == {}
        agent = await harness.create("hi", model="scripted:m", cwd=tmp_path, tools=[_Ping()])
        await agent.wait_idle()
        assert list(harness._loops._session_loops) == [agent.id]
        await agent.aclose()
        second = await harness.create(model="scripted:m", cwd=tmp_path, tools=[_Ping()])
        assert list(harness._loops._session_loops) == [second.id]


async def test_an_open_session_is_never_replaced_by_one_with_tools_of_its_own(
    tmp_path: Path,
) -> None:
    model = ScriptedModel([text_response("ok")])
    async with compose(_config(tmp_path / "home"), models={"scripted": model}) as harness:
        first = await harness.create(model="scripted:m", cwd=tmp_path, tools=[_Ping()])
        with pytest.raises(DshError, match=first.id):
            await harness.create(
                model="scripted:m", cwd=tmp_path, session_id=first.id, tools=[_Ping()]
            )
        shared = await harness.create(model="scripted:m", cwd=tmp_path)
        with pytest.raises(DshError, match=shared.id):
            await harness.create(
                model="scripted:m", cwd=tmp_path, session_id=shared.id, tools=[_Ping()]
            )
        assert harness.get(first.id) is first
        assert harness.get(shared.id) is shared
    assert first.closed
    assert shared.closed
