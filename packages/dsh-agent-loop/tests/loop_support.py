"""Test-only parts for the loop's tests: an in-memory persistence, an echo tool, helpers.

The in-memory backend keeps the seam's rules that the loop relies on (single writer, contiguous
appends, lazy materialization, durability only at flush) and can be told to fail flushes. The
real JSONL backend is exercised in tests-integration/.
"""

from __future__ import annotations

import asyncio
import builtins
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from dsh_agent import AgentOptions
from dsh_agent_loop import AgentLoop
from dsh_llm import FinishChunk, FinishKind, FinishReason, StreamChunk
from dsh_persistence import (
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionHandleClosedError,
    SessionOwnershipLostError,
    SessionPersistenceNotFoundError,
    SessionSnapshot,
)
from dsh_session import SessionEvent, SessionHeader, encode_event, message_parts
from dsh_tools import ToolDefinition, ToolExecution

OPTIONS = AgentOptions(provider="scripted", model="demo")

MakeLoop = Callable[..., AgentLoop]
"""``make_loop(model, **AgentLoop kwargs)``: a loop with the invariant companion on."""


class FlushFailure(OSError):
    """What the in-memory backend raises from a flush it was told to fail."""


@dataclass
class Stored:
    header: SessionHeader
    inherited: int
    events: list[SessionEvent] = field(default_factory=list)
    durable: int = 0
    materialized: bool = False
    owner: object | None = None


class MemoryHandle:
    def __init__(
        self, backend: MemoryPersistence, stored: Stored, access: Literal["read", "write"]
    ) -> None:
        self._backend = backend
        self._stored = stored
        self._access = access
        self._closed = False
        self.lost = False

    @property
    def id(self) -> str:
        return self._stored.header.id

    @property
    def header(self) -> SessionHeader:
        return self._stored.header

    @property
    def inherited_event_count(self) -> int:
        return self._stored.inherited

    @property
    def access(self) -> Literal["read", "write"]:
        return self._access

    def _check(self, operation: str) -> None:
        if self._closed:
            raise SessionHandleClosedError(self.id, operation=operation)
        if self.lost and operation != "read":
            raise SessionOwnershipLostError(self.id, reason="the owner crashed (test)")

    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        self._check("read")
        end = None if length is None else offset + length
        return list(self._stored.events[offset:end])

    async def append(self, events: Sequence[SessionEvent]) -> None:
        self._check("append")
        if not events:
            return
        gate = self._backend.append_gate
        if gate is not None:  # like a real backend: a started write finishes even if cancelled
            await asyncio.shield(self._gated_append(list(events), gate))
            return
        self._store(events)

    async def _gated_append(self, events: list[SessionEvent], gate: asyncio.Event) -> None:
        self._backend.append_entered.set()
        await gate.wait()
        self._store(events)

    def _store(self, events: Sequence[SessionEvent]) -> None:
        if events[0].seq != len(self._stored.events):
            raise ValueError(f"append at {events[0].seq}, next is {len(self._stored.events)}")
        for event in events:
            encode_event(event)  # what a real backend would write must encode
        self._stored.events.extend(events)
        self._stored.materialized = True
        self._backend.appends += 1

    async def flush(self) -> None:
        self._check("flush")
        self._backend.flush_calls += 1
        if self._backend.fail_flushes:
            raise FlushFailure("the disk is full (test)")
        await asyncio.sleep(0)
        self._stored.materialized = True
        self._stored.durable = len(self._stored.events)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.lost:
            return
        if self._access == "write":
            self._stored.owner = None
            if not self._stored.materialized:
                del self._backend.sessions[self.id]
            else:
                self._stored.durable = len(self._stored.events)

    async def __aenter__(self) -> MemoryHandle:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


class MemoryPersistence:
    """A ``SessionPersistence`` in a dict, for the loop's own tests."""

    def __init__(self) -> None:
        self.sessions: dict[str, Stored] = {}
        self.fail_flushes = False
        self.append_gate: asyncio.Event | None = None
        """When set, every append waits for this event (and finishes even if cancelled)."""
        self.append_entered = asyncio.Event()
        self.flush_calls = 0
        self.appends = 0

    async def create(
        self, header: SessionHeader, *, inherited_event_count: int = 0
    ) -> MemoryHandle:
        if header.id in self.sessions:
            raise SessionAlreadyExistsError(header.id)
        stored = Stored(header, inherited_event_count)
        self.sessions[header.id] = stored
        handle = MemoryHandle(self, stored, "write")
        stored.owner = handle
        return handle

    async def open(self, session_id: str, access: Literal["read", "write"]) -> MemoryHandle:
        stored = self.sessions.get(session_id)
        if stored is None or not stored.materialized:
            raise SessionPersistenceNotFoundError(session_id)
        if access == "write":
            if stored.owner is not None:
                raise SessionAlreadyOwnedError(session_id)
            handle = MemoryHandle(self, stored, "write")
            stored.owner = handle
            return handle
        return MemoryHandle(self, stored, "read")

    async def stat(self, session_id: str) -> SessionSnapshot | None:
        return None

    async def list(self) -> builtins.list[SessionSnapshot]:
        return []

    async def flush(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def crash(self, session_id: str) -> None:
        """What survives a kill -9 of the owner: the durable events, and no owner (the dead
        owner's handle has lost ownership)."""
        stored = self.sessions[session_id]
        del stored.events[stored.durable :]
        if isinstance(stored.owner, MemoryHandle):
            stored.owner.lost = True
        stored.owner = None


class EchoArgs(BaseModel):
    text: str
    parallel: bool = False
    wait: bool = False


class EchoTool(ToolDefinition[EchoArgs]):
    """Answers its text; ``wait`` holds the body until ``release`` is set; records overlap."""

    name = "echo"
    description = "Repeat the text."
    parameters = EchoArgs

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.running = 0
        self.max_running = 0

    def is_concurrency_safe(self, args: EchoArgs) -> bool:
        return args.parallel

    async def execute(self, args: EchoArgs, execution: ToolExecution) -> str:
        self.calls.append(args.text)
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.started.set()
        execution.report_output(f"working on {args.text}\n")
        try:
            if args.wait:
                await self.release.wait()
            else:
                await asyncio.sleep(0)
            return f"echo: {args.text}"
        finally:
            self.running -= 1


def echo_args(text: str, **extra: Any) -> str:
    return json.dumps({"text": text, **extra})


def finishing(chunks: list[StreamChunk], kind: FinishKind) -> list[StreamChunk]:
    """``chunks`` with their finish chunk's reason changed to ``kind``."""
    return [*chunks[:-1], FinishChunk(reason=FinishReason(kind=kind))]


def kinds(events: Sequence[SessionEvent], *, chunks: bool = False) -> list[str]:
    """Event types in order (``assistant/chunk`` left out unless asked for)."""
    return [e.type for e in events if chunks or e.type != "assistant/chunk"]


def data(event: SessionEvent) -> Any:
    return event.to_wire()["data"]


def flat(event: SessionEvent) -> Any:
    """A surface event's data with its message's fields lifted out, whatever shape it was
    written in: ``content`` (a tool result: the tool's own blocks), ``source``, ``id``, and
    for a tool result ``callId`` and ``isError``; the event's other keys (``turn``, ``step``,
    ``usage``, ``interrupted``, ``error``, ``meta``) are kept, ``message`` is dropped."""
    wire = data(event)
    parts = message_parts(event.type, wire)
    assert parts is not None, f"{event.type} carries no message"
    lifted = {key: value for key, value in wire.items() if key not in ("message", "role")}
    lifted["content"] = parts.content if parts.result is None else parts.result
    lifted["source"] = parts.source
    lifted["id"] = parts.id
    if parts.call_id is not None:
        lifted["callId"] = parts.call_id
        lifted["isError"] = parts.is_error
    return lifted


def of_type(events: Sequence[SessionEvent], kind: str) -> list[SessionEvent]:
    return [e for e in events if e.type == kind]
