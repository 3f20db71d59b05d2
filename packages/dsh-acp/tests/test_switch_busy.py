"""While the model option reopens a session, nothing else reaches it: a prompt or a mode
change in that window is refused as busy (the agent being replaced is closed)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import acp
import pytest

from dsh_acp import DshAcpAgent
from dsh_agent_core import compose, load_config
from dsh_llm.testing import ScriptedModel


class _Editor:
    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        return None


async def test_a_prompt_or_mode_change_during_a_model_switch_is_refused_as_busy(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model = "scripted:first"\n[models."scripted:second"]\nimages = false\n'
    )
    config = load_config(env={"DSH_HOME": str(home)})
    async with compose(config, models={"scripted": ScriptedModel([])}) as harness:
        agent = DshAcpAgent(harness)
        agent.on_connect(_Editor())
        session = await agent.new_session(cwd=str(tmp_path), mcp_servers=[])
        entered, release = asyncio.Event(), asyncio.Event()
        resume = harness.resume

        async def slow_resume(*args: Any, **kwargs: Any) -> Any:
            entered.set()
            await release.wait()  # the old agent is closed, the new one not yet attached
            return await resume(*args, **kwargs)

        harness.resume = slow_resume  # type: ignore[method-assign]
        switch = asyncio.ensure_future(
            agent.set_config_option(
                config_id="model", session_id=session.session_id, value="scripted:second"
            )
        )
        await entered.wait()
        with pytest.raises(acp.RequestError) as prompt:
            await agent.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])
        with pytest.raises(acp.RequestError) as mode:
            await agent.set_session_mode(session_id=session.session_id, mode_id="read-only")
        release.set()
        await switch
        await agent.aclose()
    for refused in (prompt.value, mode.value):
        assert "busy" in str(refused) or "running" in str(refused), str(refused)
        assert session.session_id in str(refused)
