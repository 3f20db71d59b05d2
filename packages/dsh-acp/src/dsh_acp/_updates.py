"""A dsh session's events as ACP ``session/update`` notifications, live and replayed.

`UpdateTranslator` turns each event into the updates it means: streamed text and reasoning as
message and thought chunks, a ``tool/call`` as a tool call (pending, with its kind, title,
locations and, for an edit or a write, its diff), an allowed approval or the first output as
in progress, the ``tool/result`` as completed or failed with its output. Replaying a stored log
(``session/load``) reads the finished messages instead of the chunks, and the user's prompts
(their text, then the images they carried). A ``todo/write`` is the editor's plan
(`dsh_acp._plans`): live as it is written, the standing one on replay.
`UpdateStream` sends them to the editor in order, one at a time, from a queue the synchronous
session subscriber feeds."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from acp import (
    image_block,
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from dsh_acp._calls import OUTPUT_TAIL_CHARS, CallContent, call_view, output_content
from dsh_acp._plans import PlanUpdates
from dsh_session import SessionEvent, message_parts

__all__ = ["SessionUpdate", "UpdateSink", "UpdateStream", "UpdateTranslator", "result_text"]

_log = logging.getLogger("dsh_acp")

SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
)
"""An update this agent sends."""


class UpdateSink(Protocol):
    """Where updates go: the editor's end of the connection (``session/update``)."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """Send ``update`` for ``session_id``."""
        ...


def _texts(blocks: Iterable[Any], kind: str) -> str:
    return "".join(
        str(block.get("text", ""))
        for block in blocks
        if isinstance(block, Mapping) and block.get("type") == kind
    )


def result_text(data: object) -> tuple[str, bool]:
    """A ``tool/result``'s text (its text blocks, in either message shape) and whether it is
    an error."""
    parts = message_parts("tool/result", data)
    if parts is None:
        return "", False
    return _texts(parts.result or [], "text"), bool(parts.is_error)


@dataclass
class _Call:
    content: list[CallContent] = field(default_factory=list)
    output: str = ""
    running: bool = False


class UpdateTranslator:
    """Turns one session's events into updates (see the module docs); ``cwd`` makes the
    paths of tool calls absolute."""

    def __init__(self, cwd: str | None) -> None:
        self.cwd = cwd
        self._calls: dict[str, _Call] = {}
        self._approvals: dict[str, str] = {}  # approval id -> call id
        self._streamed = False  # this step streamed chunks (else the message says it all)
        self._plans = PlanUpdates()
        self.last_reason: Any = None
        """The ``reason`` of the last ``turn/end`` seen."""

    # -- live ---------------------------------------------------------------------------------

    def live(self, event: SessionEvent) -> list[SessionUpdate]:
        """What ``event`` adds while a turn runs."""
        data: Any = event.data if isinstance(event.data, dict) else {}
        kind = event.type
        if kind in ("todo/write", "turn/start"):
            return list(self._plans.live(event))
        if kind == "step/start":
            self._streamed = False
        elif kind == "assistant/chunk":
            chunk = data.get("chunk")
            if isinstance(chunk, Mapping):
                return self._chunk(chunk)
        elif kind == "assistant/message" and not self._streamed:
            return self._message(data)
        elif kind == "tool/call":
            return [self._start(data)]
        elif kind == "approval/asked":
            if isinstance(data.get("id"), str) and isinstance(data.get("callId"), str):
                self._approvals[data["id"]] = data["callId"]
        elif kind == "approval/decided":
            call_id = self._approvals.pop(str(data.get("id")), None)
            if call_id is not None and data.get("outcome") == "allowed-once":
                return self.running(call_id)
        elif kind == "tool/result":
            return self._result(data)
        elif kind == "turn/end":
            self.last_reason = data.get("reason")
        return []

    def _chunk(self, chunk: Mapping[str, Any]) -> list[SessionUpdate]:
        text = chunk.get("text")
        if not isinstance(text, str) or not text:
            return []
        if chunk.get("type") == "text-delta":
            self._streamed = True
            return [update_agent_message_text(text)]
        if chunk.get("type") == "reasoning-delta":
            self._streamed = True
            return [update_agent_thought_text(text)]
        return []

    def running(self, call_id: str) -> list[SessionUpdate]:
        """The call is running now (once)."""
        call = self._calls.get(call_id)
        if call is None or call.running:
            return []
        call.running = True
        return [update_tool_call(call_id, status="in_progress")]

    def output(self, call_id: str, text: str) -> list[SessionUpdate]:
        """A running call reported ``text``: the output so far (its bounded tail) as the call's
        content, after its diff if it has one."""
        call = self._calls.get(call_id)
        if call is None:
            return []
        updates = self.running(call_id)
        call.output = (call.output + text)[-OUTPUT_TAIL_CHARS:]
        content = [*call.content, output_content(call.output)]
        updates.append(update_tool_call(call_id, status="in_progress", content=content))
        return updates

    def _start(self, data: Mapping[str, Any]) -> ToolCallStart:
        call_id = str(data.get("callId"))
        view = call_view(str(data.get("name")), data.get("arguments"), self.cwd)
        self._calls[call_id] = _Call(content=list(view.content))
        return start_tool_call(
            call_id,
            view.title,
            kind=view.kind,
            status="pending",
            content=view.content or None,
            locations=view.locations or None,
            raw_input=view.raw_input,
        )

    def _result(self, data: Mapping[str, Any]) -> list[SessionUpdate]:
        parts = message_parts("tool/result", data)
        call_id = data.get("callId") or (parts.call_id if parts is not None else None)
        if not isinstance(call_id, str):
            return []
        call = self._calls.pop(call_id, _Call())
        text, failed = result_text(data)
        content = [*call.content, *([output_content(text)] if text.strip() else [])]
        return [
            update_tool_call(
                call_id,
                status="failed" if failed else "completed",
                content=content,
                raw_output={"text": text[-OUTPUT_TAIL_CHARS:], "isError": failed},
            )
        ]

    def _message(self, data: object) -> list[SessionUpdate]:
        parts = message_parts("assistant/message", data)
        if parts is None:
            return []
        updates: list[SessionUpdate] = []
        thought = _texts(parts.content, "reasoning")
        if thought:
            updates.append(update_agent_thought_text(thought))
        answer = _texts(parts.content, "text")
        if answer:
            updates.append(update_agent_message_text(answer))
        return updates

    # -- replay -------------------------------------------------------------------------------

    def replay(self, events: Iterable[SessionEvent]) -> list[SessionUpdate]:
        """The updates that show a stored log's conversation: each user prompt, each
        answer (reasoning, then text), each tool call with its result; then the plan still
        standing, if one does."""
        events = list(events)
        updates: list[SessionUpdate] = []
        for event in events:
            if event.type == "user/message":
                parts = message_parts("user/message", event.data)
                source = parts.source if parts is not None else None
                if parts is None or (source is not None and source.get("kind") == "plugin"):
                    continue  # a notice a plugin gave the model, not what the user typed
                text = _texts(parts.content, "text")
                if text:
                    updates.append(update_user_message_text(text))
                updates.extend(_images(parts.content))
            elif event.type == "assistant/message":
                updates.extend(self._message(event.data))
            elif event.type == "tool/call" and isinstance(event.data, dict):
                updates.append(self._start(event.data))
            elif event.type == "tool/result" and isinstance(event.data, dict):
                updates.extend(self._result(event.data))
        updates.extend(self._plans.replay(events))
        return updates


def _images(blocks: Iterable[Any]) -> list[SessionUpdate]:
    """The images of a user's prompt as the log holds them inline (base64 and its type), each
    as the prompt's image block; an image stored as an attachment, outside the log, is not
    shown."""
    return [
        update_user_message(image_block(block["data"], block["mimeType"]))
        for block in blocks
        if isinstance(block, Mapping)
        and block.get("type") == "image"
        and isinstance(block.get("data"), str)
        and isinstance(block.get("mimeType"), str)
    ]


@dataclass(frozen=True, slots=True)
class _LatestOutput:
    """A place in the queue for a call's output: the update sent there is the latest one."""

    call_id: str


class UpdateStream:
    """Sends one session's updates to ``sink`` in order (a queue and one sender task); a send
    that fails (the editor went away) is logged and the rest are dropped.

    A call's output updates are coalesced (`push_output`): while one waits in the queue, a newer
    one replaces it, so a command that floods output while the editor reads slowly keeps at most
    one output update per call queued (memory stays bounded)."""

    def __init__(self, sink: UpdateSink, session_id: str) -> None:
        self._sink = sink
        self._session_id = session_id
        self._queue: asyncio.Queue[SessionUpdate | _LatestOutput] = asyncio.Queue()
        self._latest: dict[str, SessionUpdate] = {}
        self._broken = False
        self._task = asyncio.get_running_loop().create_task(self._send())

    def push(self, updates: Iterable[SessionUpdate]) -> None:
        """Queue ``updates`` (from any callback on the event loop)."""
        if self._broken:
            return
        for update in updates:
            self._queue.put_nowait(update)

    def push_output(self, call_id: str, updates: list[SessionUpdate]) -> None:
        """Queue a call's output: every update but the last as `push` does; the last (the
        output so far) replaces one of the same call still waiting to be sent."""
        if self._broken or not updates:
            return
        *before, latest = updates
        self.push(before)
        waiting = call_id in self._latest
        self._latest[call_id] = latest
        if not waiting:
            self._queue.put_nowait(_LatestOutput(call_id))

    async def drain(self) -> None:
        """Wait until every queued update was sent (or dropped)."""
        await self._queue.join()

    async def _send(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                update = self._latest.pop(item.call_id) if isinstance(item, _LatestOutput) else item
                if not self._broken:
                    await self._sink.session_update(session_id=self._session_id, update=update)
            except Exception as error:
                self._broken = True
                _log.warning("session %s: updates are no longer sent: %s", self._session_id, error)
            finally:
                self._queue.task_done()

    async def aclose(self) -> None:
        """Stop sending (what is still queued is dropped)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
        self._latest.clear()
