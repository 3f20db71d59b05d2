"""Compaction composed: the ``[compaction]`` table, the Compactor mounted by default, and
``Harness.compact`` for idle sessions (live or stored)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh_agent_core import Config, ConfigError, DshError, compose, load_config
from dsh_agent_core._runtime_context import RUNTIME_CONTEXT_PLUGIN
from dsh_compaction import INSTRUCTION_PLUGIN, check_compaction_log
from dsh_llm import ModelRequest, StreamChunk
from dsh_llm.testing import text_response
from dsh_session import Session


def configured(home: Path, text: str = "") -> Config:
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


class Replier:
    """Long answers to conversation requests, a short summary to the summary call."""

    def __init__(self, window: int | None, *, hang: asyncio.Event | None = None) -> None:
        self.window = window
        self.requests: list[ModelRequest] = []
        self.hang = hang

    def context_window(self, model: str) -> int | None:
        return self.window

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        self.requests.append(request)
        last = request.messages[-1]
        if getattr(last.source, "plugin", None) == INSTRUCTION_PLUGIN:
            reply = "- the user asked several long questions; all answered"
        else:
            if self.hang is not None:
                await self.hang.wait()
            reply = "a long answer " * 80
        for chunk in text_response(reply):
            yield chunk

    async def aclose(self) -> None:
        return None

    def summaries(self) -> int:
        return sum(
            1
            for r in self.requests
            if getattr(r.messages[-1].source, "plugin", None) == INSTRUCTION_PLUGIN
        )


def test_the_compaction_table_is_validated_and_named(tmp_path: Path) -> None:
    assert configured(tmp_path).compaction.policy("p", "m").threshold(1000) == 800
    config = configured(
        tmp_path,
        "[compaction]\nretain_tokens = 500\n\n[compaction.prune]\nthreshold_chars = 4000\n"
        'head_chars = 1000\ntail_chars = 500\n\n[[compaction.models]]\nprovider = "scripted"\n'
        'model = "m"\nthreshold_ratio = 0.5\n',
    )
    assert config.compaction.policy("scripted", "m").threshold(1000) == 500
    assert config.compaction.policy("scripted", "m").retained(1000) == 500
    assert config.compaction.prune.head_chars == 1000
    with pytest.raises(ConfigError, match=r"compaction\.bogus"):
        configured(tmp_path, "[compaction]\nbogus = 1\n")
    with pytest.raises(ConfigError, match=r"retain_ratio 0\.9 must be below"):
        configured(tmp_path, "[compaction]\nretain_ratio = 0.9\n")
    with pytest.raises(ConfigError, match=r"compaction\.models\.0\.color"):
        configured(tmp_path, '[[compaction.models]]\nprovider = "p"\nmodel = "m"\ncolor = 1\n')


async def test_the_compactor_is_mounted_by_default(tmp_path: Path) -> None:
    model = Replier(4000)  # the bash tool's schema alone is ~1,500 tokens of every request
    async with compose(configured(tmp_path), models={"scripted": model}) as harness:
        agent = await harness.create("a question " * 60, model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        for turn in range(6):
            agent.followup(f"question {turn} " + "detail " * 60)
            await agent.wait_idle()
        kinds = [event.type for event in agent.session.events]
        assert "compaction/summary" in kinds
        assert model.summaries() >= 1
        derived = agent.session.derive_messages()
        assert derived[0].source.plugin == "compact"  # type: ignore[union-attr]
        plugins = [getattr(m.source, "plugin", None) for m in derived]
        assert RUNTIME_CONTEXT_PLUGIN in plugins[1:]  # the shadowed snapshot was entered again
        check_compaction_log(agent.session.events)
        assert [e.data["reason"]["kind"] for e in agent.session.events if e.type == "turn/end"] == [
            "completed"
        ] * 7
        live = list(agent.session.events)
        session_id = agent.id
    async with (
        compose(configured(tmp_path), models={"scripted": Replier(6000)}) as again,
        await again.persistence.open(session_id, "read") as handle,
    ):
        stored = list(await handle.read(0))
        assert stored == live
        assert Session(handle.header, stored).derive_messages() == derived


async def test_auto_false_leaves_sessions_alone(tmp_path: Path) -> None:
    model = Replier(6000)
    config = configured(tmp_path, "[compaction]\nauto = false\n")
    async with compose(config, models={"scripted": model}) as harness:
        agent = await harness.create("a question " * 60, model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        for turn in range(6):
            agent.followup(f"question {turn} " + "detail " * 60)
            await agent.wait_idle()
        assert "compaction/start" not in {event.type for event in agent.session.events}
        assert model.summaries() == 0


async def _stored_session(home: Path) -> str:
    async with compose(configured(home), models={"scripted": Replier(None)}) as harness:
        agent = await harness.create("first " * 100, model="scripted:m", cwd=home)
        await agent.wait_idle()
        agent.followup("second " * 100)
        await agent.wait_idle()
        return agent.id


async def test_compacting_a_stored_session_resumes_compacts_and_closes_it(tmp_path: Path) -> None:
    session_id = await _stored_session(tmp_path)
    model = Replier(None)
    async with compose(configured(tmp_path), models={"scripted": model}) as harness:
        result = await harness.compact(session_id)
        assert result is not None
        assert harness.get(session_id) is None  # closed again
        assert model.summaries() == 1
    async with (
        compose(configured(tmp_path), models={"scripted": Replier(None)}) as reader,
        await reader.persistence.open(session_id, "read") as handle,
    ):
        events = list(await handle.read(0))
        start = next(e for e in events if e.type == "compaction/start")
        end = next(e for e in events if e.type == "compaction/end")
        assert start.data["turn"] is None
        assert end.data["turn"] is None
        assert "error" not in end.data
        session = Session(handle.header, events)
        assert session.derive_messages()[0].source.plugin == "compact"  # type: ignore[union-attr]
        check_compaction_log(events)


async def test_compacting_a_live_idle_agent_and_refusing_a_running_one(tmp_path: Path) -> None:
    hang = asyncio.Event()
    model = Replier(None)
    async with compose(configured(tmp_path), models={"scripted": model}) as harness:
        agent = await harness.create("first " * 100, model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        agent.followup("second " * 100)
        await agent.wait_idle()
        assert await harness.compact(agent.id) is not None
        model.hang = hang
        agent.followup("third " * 100)
        await asyncio.sleep(0.05)
        length = agent.session.next_seq
        with pytest.raises(DshError, match="running a turn"):
            await harness.compact(agent.id)
        assert agent.session.next_seq == length  # nothing logged
        hang.set()
        await agent.wait_idle()


async def test_a_session_open_elsewhere_or_with_nothing_to_compact(tmp_path: Path) -> None:
    session_id = await _stored_session(tmp_path)
    async with compose(configured(tmp_path), models={"scripted": Replier(None)}) as owner:
        await owner.resume(session_id)  # holds the write handle
        async with compose(configured(tmp_path), models={"scripted": Replier(None)}) as other:
            with pytest.raises(DshError, match="open in another process"):
                await other.compact(session_id)
    async with compose(configured(tmp_path), models={"scripted": Replier(None)}) as harness:
        fresh = await harness.create(model="scripted:m", cwd=tmp_path)
        assert await harness.compact(fresh.id) is None
        assert "compaction/start" not in {event.type for event in fresh.session.events}
        await fresh.aclose()
        # stored, never sent a request (no route logged): still nothing to compact, no error
        assert await harness.compact(fresh.id) is None
