"""Readable renderings of a session: the live stream of ``dsh run`` and ``dsh sessions show``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from rich.console import Console

from dsh_agent_core.cli._calls import call_line
from dsh_agent_core.cli._terminal import terminal_text_of as _text
from dsh_session import SessionEvent, SessionHeader, message_parts

__all__ = ["LivePrinter", "reason_text", "render_transcript"]

_RESULT_LINES = 12


def _texts(blocks: Any, kind: str = "text") -> str:
    if not isinstance(blocks, list):
        return ""
    return "".join(
        block.get("text", "")
        for block in blocks
        if isinstance(block, dict)
        and block.get("type") == kind
        and isinstance(block.get("text"), str)
    )


def reason_text(reason: Any) -> str:
    """A ``turn/end`` reason in words (``completed``, ``aborted (user)``, ``error CODE: …``)."""
    if not isinstance(reason, dict):
        return str(reason)
    kind = str(reason.get("kind"))
    if kind == "aborted":
        cause = reason.get("reason")
        label = cause.get("kind") if isinstance(cause, dict) else cause
        return f"aborted ({label})"
    if kind == "error":
        error: dict[str, Any] = reason["error"] if isinstance(reason.get("error"), dict) else {}
        return f"error {error.get('code', '?')}: {error.get('message', '')}"
    return kind


def _developer_text(message: dict[str, Any]) -> str:
    """A v4 ``developer/message``'s tool additions and removals, as one line."""
    changes = [
        f"{'+' if block.get('type') == 'tool-addition' else '-'}{block.get('toolName')}"
        for block in message.get("content") or ()
        if isinstance(block, dict) and block.get("type") in ("tool-addition", "tool-removal")
    ]
    return f"tools {' '.join(changes)}" if changes else ""


def _result_lines(data: dict[str, Any]) -> tuple[str, bool]:
    parts = message_parts("tool/result", data)  # either message shape
    content = None if parts is None else parts.result
    is_error = parts is not None and bool(parts.is_error)
    text = _texts(content).rstrip("\n") or "(no output)"
    lines = text.split("\n")  # not splitlines(): \r, \x85 and the like are shown, not lines
    if len(lines) > _RESULT_LINES:
        lines = [*lines[:_RESULT_LINES], f"… ({len(lines) - _RESULT_LINES} more lines)"]
    return "\n".join(lines), is_error


def _print_result(console: Console, data: dict[str, Any]) -> None:
    text, is_error = _result_lines(data)
    body = "\n".join(
        f"  ⎿ {line}" if i == 0 else f"    {line}" for i, line in enumerate(text.split("\n"))
    )
    console.print(_text(body, "red" if is_error else "dim"))


class LivePrinter:
    """A session subscriber that prints a turn as it happens: streamed text, tool calls with
    their output, and how the turn ended.

    Into a terminal (``stream``, the default when ``console`` is one) text is shown as it
    arrives; when a model call fails mid-answer and is retried, a marker line closes the
    abandoned part and the answer starts again below it. Into a pipe or a file, each model
    call's text is written once the call has succeeded, so a script reads the answer that
    counts and never an abandoned attempt (status lines still say a retry happened); and, with
    ``answer_only`` (the default), only the final answer goes there: a step that called tools,
    its calls and their output go to ``status`` (standard error). Printing
    never stops the turn: a reader that went away (``| head``) loses the rest, the turn and
    its log go on."""

    def __init__(
        self,
        console: Console,
        status: Console,
        *,
        stream: bool | None = None,
        answer_only: bool = True,
    ) -> None:
        self._console = console
        self._status = status
        self._stream = console.is_terminal if stream is None else stream
        self._whole = self._stream or not answer_only  # every step and tool on ``console``
        self._mid_line = False
        self._shown = 0  # characters of the current model call already shown (streaming)
        self._pending: list[tuple[str, str]] = []  # the current call's text (into a pipe)
        self.last_reason: Any = None
        self.last_turn: Any = None

    def _newline(self) -> None:
        if self._mid_line:
            self._console.print()
            self._mid_line = False

    def _text(self, text: str, style: str = "") -> None:
        if self._stream:
            self._console.print(_text(text, style), end="")
            self._shown += len(text)
            self._mid_line = not text.endswith("\n")
        else:
            self._pending.append((text, style))

    def _end_block(self) -> None:
        if self._stream:
            self._newline()
        elif self._pending and not self._pending[-1][0].endswith("\n"):
            self._pending.append(("\n", ""))

    def _flush(self, *, final: bool = True) -> None:
        """Write the current call's text (into a pipe: the call is over and it stands). Into a
        pipe, the text of a step that called tools is not the answer: it goes to ``status``."""
        pending, self._pending = self._pending, []
        console = self._console if final or self._whole else self._status
        for text, style in pending:
            console.print(_text(text, style), end="")
            if console is self._console:
                self._mid_line = not text.endswith("\n")
        if console is self._status and pending and not pending[-1][0].endswith("\n"):
            console.print()
        self._shown = 0

    @property
    def _tools(self) -> Console:
        """Where tool calls and their output go: with the answer on a terminal, to ``status``
        into a pipe (which then holds the final answer alone)."""
        return self._console if self._whole else self._status

    def _abandon(self) -> None:
        """The current call failed and is retried: mark (terminal) or drop (pipe) its text."""
        if self._stream:
            if self._shown:
                self._newline()
                self._console.print(
                    _text("⟲ cut off: the answer above was abandoned, it starts again below", "dim")
                )
        elif self._pending:
            dropped = sum(len(text) for text, _ in self._pending)
            self._status.print(
                _text(f"(an answer cut off after {dropped} characters was dropped; retrying)")
            )
        self._pending = []
        self._shown = 0

    def __call__(self, event: SessionEvent) -> None:
        """Print what ``event`` adds."""
        with contextlib.suppress(OSError):  # a stream that cannot be written never stops a turn
            self._show(event)

    def _show(self, event: SessionEvent) -> None:
        kind = event.type
        data: Any = event.data
        if kind == "assistant/chunk":
            chunk = data.get("chunk", {})
            if chunk.get("type") == "text-delta":
                self._text(str(chunk.get("text", "")))
            elif chunk.get("type") == "reasoning-delta":
                self._text(str(chunk.get("text", "")), "dim italic")
            elif chunk.get("type") == "block-end":
                self._end_block()
        elif kind == "assistant/message":
            parts = message_parts(kind, data)  # either message shape
            content = None if parts is None else parts.content
            calls = any(
                isinstance(block, dict) and block.get("type") == "tool-call"
                for block in content or ()
            )
            self._flush(final=not calls)
        elif kind == "tool/call":
            self._flush(final=False)
            self._newline()
            summary = call_line(str(data.get("name")), data.get("arguments", ""), limit=4000)
            self._tools.print(_text(f"⏺ {summary}", "cyan"))
        elif kind == "tool/result":
            _print_result(self._tools, data)
        elif kind == "llm/retry":
            self._abandon()
            failure = data.get("failure", {})
            self._status.print(
                _text(
                    f"retrying in {data.get('delayMs')} ms after {failure.get('code')}: "
                    f"{failure.get('message')}"
                )
            )
        elif kind == "turn/end":
            self._flush()
            self._newline()
            self.last_reason = data.get("reason")
            self.last_turn = data.get("turn")
            if (
                not isinstance(self.last_reason, dict)
                or self.last_reason.get("kind") != "completed"
            ):
                self._status.print(
                    _text(f"turn {data.get('turn')} ended: {reason_text(self.last_reason)}")
                )


def render_transcript(
    console: Console, header: SessionHeader, events: Iterable[SessionEvent]
) -> None:
    """Print a session as a transcript: messages, tool calls with their output, turn ends."""
    facts = [f"session {header.id}"]
    if header.cwd:
        facts.append(f"cwd {header.cwd}")
    if header.parent_session:
        facts.append(f"parent {header.parent_session}")
    if header.agent_preset:
        facts.append(f"preset {header.agent_preset}")
    console.print(_text(" · ".join(facts), "bold"))
    for event in events:
        kind = event.type
        data: Any = event.data
        if not isinstance(data, dict):
            continue
        if kind == "turn/start":
            console.print(_text(f"── turn {data.get('turn')} ──", "bold blue"))
        elif kind == "user/message":
            source: dict[str, Any] = data["source"] if isinstance(data.get("source"), dict) else {}
            who = (
                "user"
                if source.get("kind") == "user"
                else f"[{source.get('plugin') or source.get('kind')}]"
            )
            parts = message_parts(kind, data)
            text = _texts(None if parts is None else parts.content)
            console.print(_text(f"{who}: ", "bold green") + _text(text))
        elif kind == "assistant/message":
            parts = message_parts(kind, data)  # either message shape
            content = None if parts is None else parts.content
            reasoning = _texts(content, "reasoning")
            if reasoning:
                console.print(_text(reasoning, "dim italic"))
            text = _texts(content)
            if text:
                label = "assistant (interrupted): " if data.get("interrupted") else "assistant: "
                console.print(_text(label, "bold magenta") + _text(text))
        elif kind == "tool/call":
            summary = call_line(str(data.get("name")), data.get("arguments", ""), limit=4000)
            console.print(_text(f"⏺ {summary}", "cyan"))
        elif kind == "tool/result":
            _print_result(console, data)
        elif kind in ("system/message", "developer/message"):  # v3/v4 logs
            held = data.get("message")
            message: dict[str, Any] = held if isinstance(held, dict) else {}
            console.print(
                _text(f"[{kind.split('/', 1)[0]}]: ", "dim")
                + _text(_texts(message.get("content")) or _developer_text(message), "dim")
            )
        elif kind == "turn/end":
            console.print(
                _text(f"turn {data.get('turn')} ended: {reason_text(data.get('reason'))}", "blue")
            )
