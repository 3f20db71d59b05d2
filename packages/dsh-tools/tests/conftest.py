"""Test tools and callers shared by the dsh-tools tests (exposed as fixtures)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest
from pydantic import BaseModel, ConfigDict, Field

from dsh_session import Session, SessionHeader
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
    """A calling agent: its session (a real log) and session cwd."""

    session_id: str = "session-1"
    cwd: str | None = "/home/user/project"
    session: Session = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        header = SessionHeader(id=self.session_id, created_at=0)
        object.__setattr__(self, "session", Session(header))


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
