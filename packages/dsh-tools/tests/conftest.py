"""Test tools and callers shared by the dsh-tools tests (exposed as fixtures)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from pydantic import BaseModel, ConfigDict, Field

from dsh_tools import ToolContent, ToolDefinition, ToolExecution, ToolRegistry, ToolResult


class EchoArgs(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    text: str
    repeat: int = Field(default=1, ge=1)
    parallel: bool = False


class EchoTool(ToolDefinition[EchoArgs]):
    """Returns its text; records every execution it saw."""

    name = "echo"
    description = "Repeat the text."
    parameters = EchoArgs

    def __init__(self) -> None:
        self.seen: list[tuple[EchoArgs, ToolExecution]] = []

    async def execute(self, args: EchoArgs, execution: ToolExecution) -> ToolContent:
        self.seen.append((args, execution))
        return args.text * args.repeat

    def is_concurrency_safe(self, args: EchoArgs) -> bool:
        return args.parallel


class WaitArgs(BaseModel):
    swallow: bool = False


class WaitTool(ToolDefinition[WaitArgs]):
    """Blocks until cancelled; tells the test when its body started and whether it cleaned up."""

    name = "wait"
    description = "Wait forever."
    parameters = WaitArgs

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cleaned_up = False

    async def execute(self, args: WaitArgs, execution: ToolExecution) -> ToolResult:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if not args.swallow:
                raise
            return ToolResult.ok("finished anyway")
        finally:
            self.cleaned_up = True
        raise AssertionError("unreachable: the wait only ends by cancellation")


@dataclass(frozen=True)
class Caller:
    session_id: str = "session-1"
    cwd: str | None = "/home/user/project"

    @property
    def session(self) -> SimpleNamespace:
        """The session as `dsh_tools.ToolCaller` reads it: ``session.header.id``."""
        return SimpleNamespace(header=SimpleNamespace(id=self.session_id))


@pytest.fixture
def echo() -> EchoTool:
    return EchoTool()


@pytest.fixture
def wait_tool() -> WaitTool:
    return WaitTool()


@pytest.fixture
def registry(echo: EchoTool, wait_tool: WaitTool) -> ToolRegistry:
    tools = ToolRegistry()
    tools.register(echo)
    tools.register(wait_tool)
    return tools


@pytest.fixture
def caller() -> Caller:
    return Caller()
