"""Test-only parts: a session builder that logs what the loop logs, and a minimal agent.

The compaction package depends on the seams only, so its tests drive a bare
``dsh_session.Session``; the real loop is exercised in tests-integration/.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh_agent import AgentOptions, AgentStatus
from dsh_session import Session, SessionHeader

OPTIONS = AgentOptions(provider="scripted", model="m")


def new_session(session_id: str = "s") -> Session:
    return Session(SessionHeader(id=session_id, created_at=0))


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


class Log:
    """Appends loop-shaped events to a session, numbering turns and steps."""

    def __init__(self, session: Session | None = None) -> None:
        self.session = session if session is not None else new_session()
        self.turn = 0
        self.step = 0

    def header(
        self,
        *,
        system: str | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        prefix: Sequence[dict[str, Any]] | None = None,
        provider: str = "scripted",
        model: str = "m",
        reason: str = "initial",
    ) -> None:
        header: dict[str, Any] = {"config": {"provider": provider, "model": model}}
        if system is not None:
            header["system"] = system
        if tools:
            header["tools"] = list(tools)
        if prefix:
            header["messagePrefix"] = list(prefix)
        self.session.append("request/header", {"header": header, "reason": reason})

    def start_turn(self) -> None:
        self.turn += 1
        self.step = 0
        self.session.append("turn/start", {"turn": self.turn})

    def end_turn(self) -> None:
        self.session.append("turn/end", {"turn": self.turn, "reason": {"kind": "completed"}})

    def start_step(self) -> None:
        self.step += 1
        self.session.append("step/start", {"turn": self.turn, "step": self.step})

    def end_step(self) -> None:
        self.session.append("step/end", {"turn": self.turn, "step": self.step})

    def user(self, value: str) -> int:
        return self.session.append(
            "user/message", {"content": [text(value)], "source": {"kind": "user"}}
        ).seq

    def chunk(self, chunk: dict[str, Any]) -> int:
        return self.session.append(
            "assistant/chunk", {"turn": self.turn, "step": self.step, "chunk": chunk}
        ).seq

    def answer(
        self,
        value: str,
        *,
        usage: dict[str, int] | None = None,
        calls: Sequence[tuple[str, str, dict[str, Any]]] = (),
        cite_chunks: bool = True,
    ) -> int:
        """An assistant message (text and tool calls), with the chunks that streamed it."""
        content: list[dict[str, Any]] = []
        if value:
            content.append(text(value))
        for call_id, name, arguments in calls:
            content.append(
                {
                    "type": "tool-call",
                    "id": call_id,
                    "name": name,
                    "arguments": json.dumps(arguments),
                }
            )
        seqs: list[int] = []
        if cite_chunks:
            for index, block in enumerate(content):
                seqs.append(self.chunk({"type": "block-end", "index": index, "block": block}))
            if usage is not None:
                seqs.append(self.chunk({"type": "usage", "usage": usage}))
        data: dict[str, Any] = {
            "turn": self.turn,
            "step": self.step,
            "content": content,
            "provenance": {"provider": "scripted", "model": "m"},
        }
        if usage is not None:
            data["usage"] = usage
        return self.session.append(
            "assistant/message", data, source_event_seqs=seqs if cite_chunks else None
        ).seq

    def result(self, call_id: str, content: Sequence[dict[str, Any]], *, name: str = "bash") -> int:
        call = self.session.append(
            "tool/call",
            {
                "turn": self.turn,
                "step": self.step,
                "callId": call_id,
                "name": name,
                "arguments": "{}",
            },
        )
        return self.session.append(
            "tool/result",
            {
                "turn": self.turn,
                "step": self.step,
                "callId": call_id,
                "content": list(content),
                "isError": False,
            },
            source_event_seqs=[call.seq],
        ).seq

    def exchange(self, prompt: str, reply: str, *, usage: dict[str, int] | None = None) -> None:
        """A whole one-step turn: prompt, header (first time), answer."""
        self.start_turn()
        self.start_step()
        self.user(prompt)
        if self.session.request_header is None:
            self.header()
        self.answer(reply, usage=usage)
        self.end_step()
        self.end_turn()

    def tool_step(self, call_id: str, output: str) -> None:
        self.start_step()
        self.answer("", calls=[(call_id, "bash", {"command": "true"})])
        self.result(call_id, [text(output)])
        self.end_step()


@dataclass
class FakeAgent:
    """The parts of ``dsh_agent.Agent`` compaction reads."""

    session: Session
    options: AgentOptions = OPTIONS
    status: AgentStatus = "idle"
    cwd: str | None = None
    flushes: list[int] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.session.id

    async def flush(self) -> None:
        self.flushes.append(self.session.next_seq)


def kinds(session: Session) -> list[str]:
    return [event.type for event in session.events]


def of_type(session: Session, kind: str) -> list[Any]:
    return [event for event in session.events if event.type == kind]
