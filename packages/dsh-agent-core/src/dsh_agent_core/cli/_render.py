"""How the interactive session shows a turn: the answer as markdown, finished line by finished
line (a code block once it closes; nothing is re-wrapped or redrawn, and the line being streamed
shows in the status line), reasoning dimmed and capped, each tool call as one
line (an edit as a bounded unified diff), its result in brief, and a task list the model writes
(``todo_write``) as its items under the call, each marked by its status. A running command's
output shows live above the status line (`LiveOutput`) and is replaced by the result when the
call ends.

Everything shown comes from a model or a tool, so everything goes through the sanitizing
``TerminalConsole`` (controls shown as escapes, never interpreted)."""

from __future__ import annotations

import contextlib
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.text import Text

from dsh_agent_core._plans import TodoItem, todos_of
from dsh_agent_core.cli._calls import DIFF_LINES, call_line, edit_diff, one_line
from dsh_agent_core.cli._terminal import terminal_text
from dsh_agent_core.cli._transcript import reason_text
from dsh_session import SessionEvent, message_parts

__all__ = ["DIFF_LINES", "Activity", "LiveOutput", "MarkdownPrinter", "call_line", "edit_diff"]

REASONING_LINES = 8
"""The most lines of one reasoning block shown (dimmed); the rest stays in the log."""
RESULT_LINES = 6
"""The most lines of a tool's output shown under its call."""
LIVE_LINES = 5
"""The most lines of a running command's output shown live above the status line."""
LIVE_LINE_CHARS = 400
"""The most characters of one live line kept (a line without an end is cut there)."""
REASONING_KEPT_CHARS = 64 * 1024
"""The most characters of the latest reasoning block kept for Ctrl-O (the log has it all)."""
PLAN_LINES = 10
"""The most items of a task list shown under its ``todo_write`` call."""
PLAN_MARKS = {"completed": ("✔", "dim"), "in_progress": ("▶", "bold"), "pending": ("□", "")}
"""Each task status's mark and style."""


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return "dim"


@dataclass
class Activity:
    """What the session is doing now, for the status line's spinner."""

    label: str = ""
    since: float = field(default_factory=time.monotonic)

    def set(self, label: str) -> None:
        self.label, self.since = label, time.monotonic()

    def text(self) -> str:
        if not self.label:
            return ""
        return f"{self.label} {time.monotonic() - self.since:.0f}s"


class LiveOutput:
    """The last lines of output of the calls still running, newest call first.

    Bounded: `LIVE_LINES` lines per call, each cut at `LIVE_LINE_CHARS`; a call's lines are
    dropped when its result arrives (`finish`)."""

    def __init__(self) -> None:
        self._calls: dict[str, tuple[deque[str], list[str]]] = {}

    def feed(self, call_id: str, text: str) -> None:
        """Add ``text`` a running call reported."""
        lines, partial = self._calls.pop(call_id, (deque(maxlen=LIVE_LINES), [""]))
        self._calls[call_id] = (lines, partial)  # the latest call to report goes last
        *done, rest = (partial[0] + text).split("\n")
        for line in done:
            lines.append(line[:LIVE_LINE_CHARS])
        partial[0] = rest[-LIVE_LINE_CHARS:]

    def finish(self, call_id: str) -> None:
        """Forget a call that has ended."""
        self._calls.pop(call_id, None)

    def clear(self) -> None:
        """Forget every call (the turn ended)."""
        self._calls.clear()

    def lines(self) -> list[str]:
        """What to show: the newest reporting call's last lines, its unfinished line too."""
        if not self._calls:
            return []
        lines, partial = next(reversed(self._calls.values()))
        shown = [*lines, partial[0]] if partial[0] else list(lines)
        return shown[-LIVE_LINES:]


class MarkdownPrinter:
    """A session subscriber that prints a turn for a person at a terminal."""

    def __init__(
        self,
        console: Console,
        activity: Activity | None = None,
        live: LiveOutput | None = None,
    ) -> None:
        self._console = console
        self.activity = activity if activity is not None else Activity()
        self.live = live if live is not None else LiveOutput()
        self.last_reasoning = ""  # the latest reasoning block, whole (bounded), for Ctrl-O
        self._in_reasoning = False
        self._text = ""  # the answer's line being streamed, not yet printed
        self._fence: list[str] | None = None  # an open fenced code block's lines
        self._blank = True  # the last thing printed was a blank line (or nothing)
        self._reasoning = ""
        self._reasoning_shown = 0
        self._calls: dict[str, tuple[str, Any]] = {}
        self.last_reason: Any = None
        self.last_turn: Any = None

    def __call__(self, event: SessionEvent) -> None:
        """Print what ``event`` adds (a stream that cannot be written never stops a turn)."""
        with contextlib.suppress(OSError):
            self._show(event)

    # -- the answer ---------------------------------------------------------------------------

    def _complete_blocks(self) -> None:
        """Print every finished line: prose line by line as markdown (a heading, a list item,
        bold and code spans render at once), a fenced code block whole once it closes."""
        *lines, self._text = self._text.split("\n")
        for line in lines:
            self._line(line)

    def _line(self, line: str) -> None:
        fence = line.lstrip().startswith(("```", "~~~"))
        if self._fence is not None:
            self._fence.append(line)
            if fence:
                self._markdown("\n".join(self._fence))
                self._fence = None
            return
        if fence:
            self._fence = [line]
        elif not line.strip():
            if not self._blank:
                self._console.print()
            self._blank = True
            return
        else:
            self._markdown(line)
        self._blank = False

    def _markdown(self, block: str) -> None:
        # rich.markdown (markdown-it) loads with the first answer, not before the prompt
        from rich.markdown import Markdown

        if block.strip():
            # no terminal hyperlinks: a model could show one address and link another
            markdown = Markdown(terminal_text(block), code_theme="ansi_dark", hyperlinks=False)
            self._console.print(markdown)

    def _flush_text(self) -> None:
        if self._text:
            self._line(self._text)
            self._text = ""
        if self._fence is not None:  # an answer that ended inside a code block
            self._markdown("\n".join([*self._fence, "```"]))
            self._fence = None

    @property
    def streaming_tail(self) -> str:
        """The end of the line being streamed (not printed until it ends), for a status line."""
        tail = terminal_text(self._text, one_line=True)
        return tail if len(tail) <= 60 else "…" + tail[-59:]

    def _reasoning_delta(self, text: str) -> None:
        if not self._in_reasoning:
            self.last_reasoning, self._in_reasoning = "", True
        self.last_reasoning = (self.last_reasoning + text)[:REASONING_KEPT_CHARS]
        self._reasoning += text
        *done, self._reasoning = self._reasoning.split("\n")
        for line in done:
            self._reasoning_line(line)

    def _reasoning_line(self, line: str) -> None:
        self._reasoning_shown += 1
        if self._reasoning_shown <= REASONING_LINES:
            self._console.print(Text(terminal_text(line, one_line=True), style="dim italic"))

    def _end_reasoning(self) -> None:
        if self._reasoning:
            self._reasoning_line(self._reasoning)
        hidden = self._reasoning_shown - REASONING_LINES
        if hidden > 0:
            more = (
                f"  … {hidden} more line{'s' if hidden > 1 else ''} of reasoning (Ctrl-O shows all)"
            )
            self._console.print(Text(more, style="dim italic"))
        self._reasoning, self._reasoning_shown = "", 0
        self._in_reasoning = False

    def show_reasoning(self) -> None:
        """Print the latest reasoning block whole (dimmed), or say there is none."""
        if not self.last_reasoning.strip():
            self._console.print(Text("(no reasoning yet)", style="dim"))
            return
        self._console.print(Text("reasoning:", style="dim bold"))
        for line in self.last_reasoning.rstrip("\n").split("\n"):
            self._console.print(Text(terminal_text(line, one_line=True), style="dim italic"))
        if len(self.last_reasoning) >= REASONING_KEPT_CHARS:
            self._console.print(Text("  … (the rest is in the log)", style="dim italic"))

    # -- events --------------------------------------------------------------------------------

    def _show(self, event: SessionEvent) -> None:
        kind = event.type
        data: Any = event.data if isinstance(event.data, dict) else {}
        if kind == "step/start":
            self.activity.set("thinking")
        elif kind == "assistant/chunk":
            chunk = data.get("chunk", {})
            kind_of = chunk.get("type")
            if kind_of == "text-delta":
                self.activity.set("answering")
                self._text += str(chunk.get("text", ""))
                self._complete_blocks()
            elif kind_of == "reasoning-delta":
                self.activity.set("reasoning")
                self._reasoning_delta(str(chunk.get("text", "")))
            elif kind_of == "block-end":
                self._end_reasoning()
                self._flush_text()
        elif kind == "assistant/message":
            self._end_reasoning()
            self._flush_text()
        elif kind == "tool/call":
            self._flush_text()
            name, arguments = str(data.get("name")), data.get("arguments", "")
            self._calls[str(data.get("callId"))] = (name, arguments)
            self.activity.set(f"running {name}")
            self._console.print(Text(f"⏺ {call_line(name, arguments)}", style="cyan"))
            for line in edit_diff(name, arguments):
                self._console.print(Text(f"    {line}", style=_diff_style(line)))
        elif kind == "tool/result":
            self.live.finish(str(data.get("callId")))
            self._result(data)
            self.activity.set("thinking")
        elif kind == "todo/write":
            plan = todos_of(event)
            if plan is not None:
                self._plan(plan)
        elif kind == "llm/retry":
            self._flush_text()
            failure = data.get("failure", {})
            self._console.print(
                Text(
                    f"retrying in {data.get('delayMs')} ms after {failure.get('code')}: "
                    f"{one_line(failure.get('message'), 200)}",
                    style="yellow",
                )
            )
        elif kind == "compaction/start":
            self.activity.set("compacting")
            self._console.print(Text("compacting the conversation…", style="dim"))
        elif kind == "compaction/end" and data.get("error"):
            self._console.print(Text(f"compaction failed: {one_line(data['error'])}", "yellow"))
        elif kind == "turn/end":
            self._end_reasoning()
            self._flush_text()
            self.live.clear()
            self.activity.set("")
            self.last_reason, self.last_turn = data.get("reason"), data.get("turn")
            reason = self.last_reason
            if not isinstance(reason, dict) or reason.get("kind") != "completed":
                self._console.print(
                    Text(f"turn {data.get('turn')} ended: {reason_text(reason)}", "yellow")
                )

    def _plan(self, plan: list[TodoItem]) -> None:
        for item in plan[:PLAN_LINES]:
            mark, style = PLAN_MARKS[item.status]
            line = f"    {mark} {one_line(item.content, 160)}"
            self._console.print(Text(line, style=style))
        if len(plan) > PLAN_LINES:
            self._console.print(Text(f"    … ({len(plan) - PLAN_LINES} more)", style="dim"))

    def _result(self, data: dict[str, Any]) -> None:
        parts = message_parts("tool/result", data)  # either message shape
        content: Any = None if parts is None else parts.result
        if isinstance(data.get("content"), str):
            content = data["content"]
        text = ""
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        lines = text.rstrip("\n").split("\n") if text.strip() else ["(no output)"]
        shown = lines[:RESULT_LINES]
        if len(lines) > RESULT_LINES:
            shown.append(f"… ({len(lines) - RESULT_LINES} more lines)")
        style = "red" if parts is not None and parts.is_error else "dim"
        for i, line in enumerate(shown):
            prefix = "  ⎿ " if i == 0 else "    "
            self._console.print(Text(prefix + terminal_text(line, one_line=True), style=style))
