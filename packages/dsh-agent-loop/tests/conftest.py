"""Fixtures of the loop's tests (the parts they use live in ``loop_support.py``)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the test modules import loop_support

from dsh_agent import Extensions
from dsh_agent_loop import AgentLoop, RetryPolicy
from dsh_llm import Model
from dsh_tools import ToolRegistry
from loop_support import EchoTool, MakeLoop, MemoryPersistence


@pytest.fixture
def echo() -> EchoTool:
    return EchoTool()


@pytest.fixture
def registry(echo: EchoTool) -> ToolRegistry:
    tools = ToolRegistry()
    tools.register(echo)
    return tools


@pytest.fixture
def memory() -> MemoryPersistence:
    return MemoryPersistence()


@pytest.fixture
async def make_loop(registry: ToolRegistry) -> AsyncIterator[MakeLoop]:
    """Loops with the invariant companion on; each is closed after the test, and none may have
    refused a request unless the test says so (``expect_invariant_failures``)."""
    loops: list[tuple[AgentLoop, bool]] = []

    def make(
        model: Model,
        *,
        extensions: Extensions | None = None,
        expect_invariant_failures: bool = False,
        **kwargs: Any,
    ) -> AgentLoop:
        kwargs.setdefault("tools", registry)
        kwargs.setdefault("retry", RetryPolicy(initial_delay_ms=0, max_delay_ms=0))
        loop = AgentLoop(model, extensions=extensions, check_requests=True, **kwargs)
        loops.append((loop, expect_invariant_failures))
        return loop

    yield make
    for loop, expected in loops:
        await loop.aclose()
        if not expected:
            assert loop.invariant_failures == []
