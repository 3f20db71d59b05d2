"""Approvals asked on a terminal (the interactive session's prompt, or ``dsh run``'s): allow
once, allow for this session, reject, or reject with a message to the model; the question names
the tool, the command or path, and shows a short preview of what it would write.

In the interactive session the answer is the next line typed at its prompt (the prompt says so
while a question is open); ``dsh run`` asks at a prompt of its own. Ctrl-C there rejects and
cancels the turn. An "allow for this session" grant covers later requests of the same kind in
the same session (the same tool asking for the same sandbox, or the same tool when it asks for
no sandbox) and is logged as the command ``allow-for-session`` (``command/run`` +
``command/done``); each request it answers is still logged as its ``approval/asked`` and
``approval/decided`` pair."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text

from dsh_agent import ApprovalAnswerer, ApprovalOutcome, ApprovalRequest
from dsh_agent_core._grants import GRANT_COMMAND, log_grant
from dsh_agent_core._grants import grant_kind as request_kind
from dsh_agent_core.cli._render import edit_diff
from dsh_agent_core.cli._terminal import terminal_text

__all__ = [
    "ANSWER_HINT",
    "GRANT_COMMAND",
    "InlineApprovals",
    "log_grant",
    "request_kind",
    "shown",
    "tell_the_model",
    "terminal_answerer",
]

ANSWER_HINT = "a allow once · s allow for this session · r reject · r <message> reject and tell"
"""The answers a question takes, as the prompt shows them."""

_PREVIEW_LINES = 8
_LINE_LIMIT = 64 * 1024
"""The most bytes of one answer line read before it is taken as it is."""


def shown(text: str) -> str:
    """Model-written ``text`` for one line of the question: every control character (an escape
    sequence could move the cursor and overwrite the command the user is reading, a bidi
    override reorder it), newline and tab included, shown as its escape."""
    return terminal_text(text, one_line=True)


@dataclass
class _Question:
    request: ApprovalRequest
    answer: asyncio.Future[str]


def tell_the_model(request: ApprovalRequest, message: str) -> None:
    """A rejection's message, steered to the asking agent: the model reads it next step."""
    request.agent.steer(f"I rejected the {request.tool_name} call: {message}")


@dataclass
class InlineApprovals:
    """The approval answerer of a terminal (register :meth:`answer`); lines reach it through
    :meth:`take`, from the interactive session's prompt or :func:`terminal_answerer`'s."""

    console: Console
    log_grant: Callable[[ApprovalRequest, tuple[str, str]], None] = log_grant
    on_reject_message: Callable[[ApprovalRequest, str], None] = tell_the_model
    on_change: Callable[[], None] = lambda: None
    grants: set[tuple[str, str, str]] = field(default_factory=set)
    """``(session id, tool, sandbox)`` of each "allow for this session" answer."""
    _open: _Question | None = None
    _asking: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def asking(self) -> bool:
        """Whether a question waits for the next line typed."""
        return self._open is not None

    def take(self, line: str) -> bool:
        """Give ``line`` to the open question; ``False`` when none is open."""
        if self._open is None or self._open.answer.done():
            return False
        self._open.answer.set_result(line)
        return True

    def interrupt(self) -> bool:
        """Ctrl-C: reject the open question (the caller cancels the turn); ``False``: none."""
        return self.take("\x03")

    def _show(self, request: ApprovalRequest) -> None:
        arguments = dict(request.arguments or {})
        self.console.print(Text("approval needed", style="bold yellow"))
        lines = [f"tool: {shown(request.tool_name)}"]
        for key in ("command", "workdir", "file_path", "path", "pattern"):
            value = arguments.get(key)
            if isinstance(value, str):
                lines.append(f"{key}: {shown(value)}")
        if arguments.get("run_in_background") is True:
            lines.append("runs in the background")
        if request.reason:
            lines.append(f"reason: {shown(request.reason)}")
        for line in lines:
            self.console.print(Text(line))
        preview = edit_diff(request.tool_name, arguments, limit=_PREVIEW_LINES)
        for line in preview:
            self.console.print(Text(f"    {line}", style="dim"))
        self.console.print(Text(f"answer: {ANSWER_HINT}", style="bold"))

    async def answer(self, request: ApprovalRequest) -> ApprovalOutcome | None:
        """Answer ``request``: at once under a grant of its kind, else ask."""
        kind = request_kind(request)
        granted = (request.agent.id, *kind)  # a grant covers its own session only
        if granted in self.grants:
            return "allowed-once"
        async with self._asking:  # one question at a time
            return await self._ask(request, kind, granted)

    async def _ask(
        self, request: ApprovalRequest, kind: tuple[str, str], granted: tuple[str, str, str]
    ) -> ApprovalOutcome:
        if granted in self.grants:  # granted while this request waited its turn
            return "allowed-once"
        self._show(request)
        while True:
            question = _Question(request, asyncio.get_running_loop().create_future())
            self._open = question
            self.on_change()
            try:
                line = await question.answer
            finally:
                self._open = None
                self.on_change()
            choice, _, message = line.strip().partition(" ")
            choice = choice.lower()
            if line == "\x03":
                return "rejected"
            if choice in ("a", "y", "yes"):
                return "allowed-once"
            if choice == "s":
                self.grants.add(granted)
                self.log_grant(request, kind)
                shown = " ".join(part for part in kind if part)
                self.console.print(Text(f"  (allowed for this session: {shown})", style="dim"))
                return "allowed-once"
            if choice in ("r", "n", "no"):
                if message.strip():
                    self.on_reject_message(request, message.strip())
                return "rejected"
            self.console.print(Text(f"  answer one of: {ANSWER_HINT}", style="yellow"))


async def _line_from_stdin() -> str | None:
    """One line typed on standard input, read without blocking the event loop (so Ctrl-C's
    cancel ends the wait at once: no thread is left reading); ``None`` at end of input."""
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    data = bytearray()
    while True:
        ready: asyncio.Future[None] = loop.create_future()

        def wake(future: asyncio.Future[None] = ready) -> None:
            if not future.done():
                future.set_result(None)

        loop.add_reader(fd, wake)
        try:
            await ready
        finally:
            loop.remove_reader(fd)
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        data += chunk
        if b"\n" in data or len(data) > _LINE_LIMIT:
            return data.split(b"\n", 1)[0].decode("utf-8", errors="replace")


def terminal_answerer(console: Console) -> ApprovalAnswerer:
    """The approval answerer of ``dsh run`` on a terminal: the question as the interactive
    session asks it (on ``console``, standard error), answered by a line on standard input.
    Ctrl-C cancels the turn as it does anywhere in ``dsh run`` (the question ends, nothing is
    left reading); end of input is ``unavailable``, never a grant. One question at a time."""
    approvals = InlineApprovals(console)
    lock = asyncio.Lock()

    async def answer(request: ApprovalRequest) -> ApprovalOutcome | None:
        async with lock:
            asking = asyncio.get_running_loop().create_task(approvals.answer(request))
            try:
                while True:
                    await asyncio.sleep(0)  # the question is shown and open
                    if asking.done():
                        return await asking
                    line = await _line_from_stdin()
                    if line is None:
                        asking.cancel()
                        return "unavailable"
                    approvals.take(line)
            finally:
                if not asking.done():
                    asking.cancel()

    return answer
