"""``shutdown_on_signals``: real signals sent to this process while a harness block runs.

The end-to-end case (a real ``dsh run`` killed while its bash command sleeps) is in
``tests-integration/test_cli.py``.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh_agent_core import (
    SHUTDOWN_SIGNALS,
    Config,
    DshError,
    Harness,
    compose,
    load_config,
    shutdown_on_signals,
)
from dsh_agent_loop import LoopAgent
from dsh_llm import ModelRequest, StreamChunk

HANG_GUARD = 60.0
"""Seconds a test may wait for something that must happen: a hang guard, not a speed bar."""


def configured(home: Path) -> Config:
    return load_config(env={"DSH_HOME": str(home)})


class Stuck:
    """A model that answers nothing until cancelled; ``asked`` is set once it is asked."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        self.asked.set()
        await asyncio.Event().wait()
        yield  # type: ignore[misc]  # never reached: an async generator

    async def aclose(self) -> None:
        pass


def assert_closed(harness: Harness) -> None:
    with pytest.raises(DshError, match="closed"):
        harness.loop()


def test_the_default_signals_are_sigterm_and_sighup() -> None:
    assert SHUTDOWN_SIGNALS == (signal.SIGTERM, signal.SIGHUP)


@pytest.mark.parametrize("signum", SHUTDOWN_SIGNALS, ids=lambda s: s.name)
async def test_a_signal_cancels_the_running_turn_closes_the_harness_and_exits_128_plus_signum(
    tmp_path: Path, signum: signal.Signals
) -> None:
    model = Stuck()
    harness = compose(configured(tmp_path), models={"stuck": model})
    agents: list[LoopAgent] = []

    async def block() -> None:
        async with shutdown_on_signals(harness):
            agents.append(await harness.create("wait", model="stuck:m", cwd=tmp_path))
            await asyncio.wait_for(model.asked.wait(), HANG_GUARD)
            os.kill(os.getpid(), signum)
            await asyncio.wait_for(asyncio.Event().wait(), HANG_GUARD)  # ended by the signal

    with pytest.raises(SystemExit) as exited:
        await block()
    assert exited.value.code == 128 + signum
    (agent,) = agents
    assert_closed(harness)
    assert agent.closed
    last = agent.session.events[-1]
    assert last.type == "turn/end"
    assert last.to_wire()["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}
    async with compose(configured(tmp_path)) as reader:  # the log as another process sees it
        stored = await reader.persistence.stat(agent.id)
    assert stored is not None
    assert stored.event_count == len(agent.session.events)


async def test_a_signal_while_the_harness_closes_lets_the_close_finish_then_exits(
    tmp_path: Path,
) -> None:
    harness = compose(configured(tmp_path))
    with pytest.raises(SystemExit) as exited:
        async with shutdown_on_signals(harness):
            os.kill(os.getpid(), signal.SIGTERM)  # delivered once the block has ended
    assert exited.value.code == 128 + signal.SIGTERM
    assert_closed(harness)


async def test_without_a_signal_the_block_closes_the_harness_and_removes_its_handlers(
    tmp_path: Path,
) -> None:
    harness = compose(configured(tmp_path))
    async with shutdown_on_signals(harness) as entered:
        assert entered is harness
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)
    assert_closed(harness)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL


async def test_a_cancel_from_outside_is_not_an_exit_and_still_closes_the_harness(
    tmp_path: Path,
) -> None:
    harness = compose(configured(tmp_path))
    entered = asyncio.Event()

    async def block() -> None:
        async with shutdown_on_signals(harness):
            entered.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(block())
    await asyncio.wait_for(entered.wait(), HANG_GUARD)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_closed(harness)


async def test_only_the_signals_given_are_handled(tmp_path: Path) -> None:
    harness = compose(configured(tmp_path))
    async with shutdown_on_signals(harness, signals=(signal.SIGUSR1,)):
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        assert signal.getsignal(signal.SIGUSR1) not in (signal.SIG_DFL, None)
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL


async def test_a_signal_the_process_ignores_stays_ignored(tmp_path: Path) -> None:
    """``nohup`` ignores SIGHUP before the program starts; the block must not undo that."""
    harness = compose(configured(tmp_path))
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        async with shutdown_on_signals(harness):
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
    assert_closed(harness)
