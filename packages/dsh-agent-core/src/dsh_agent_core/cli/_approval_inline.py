"""Approvals asked inline in the interactive session: allow once, allow for this session, reject,
or reject with a message to the model; the question names the tool, the command or path, and
shows a short preview of what it would write.

The answer is the next line typed at the session's prompt (the prompt says so while a question
is open). Ctrl-C there rejects and cancels the turn. An "allow for this session" grant covers
later requests of the same kind (the same tool asking for the same sandbox, or the same tool
when it asks for no sandbox) and is logged as ``approval/session-grant``; each request it
answers is still logged as its ``approval/asked`` and ``approval/decided`` pair."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text

from dsh_agent import ApprovalOutcome, ApprovalRequest
from dsh_agent_core.cli._render import edit_diff
from dsh_agent_core.cli._terminal import terminal_text

__all__ = ["ANSWER_HINT", "InlineApprovals", "request_kind"]

ANSWER_HINT = "a allow once · s allow for this session · r reject · r <message> reject and tell"
"""The answers a question takes, as the prompt shows them."""

_ESCALATION = re.compile(r"^escalate sandbox to (\S+?):")
_PREVIEW_LINES = 8


def request_kind(request: ApprovalRequest) -> tuple[str, str]:
    """What a session grant covers: the tool, and the sandbox it asks for (``""``: none)."""
    found = _ESCALATION.match(request.reason or "")
    return request.tool_name, found.group(1) if found else ""


@dataclass
class _Question:
    request: ApprovalRequest
    answer: asyncio.Future[str]


@dataclass
class InlineApprovals:
    """The interactive session's approval answerer (register :meth:`answer`)."""

    console: Console
    log_grant: Callable[[ApprovalRequest, tuple[str, str]], None]
    on_reject_message: Callable[[ApprovalRequest, str], None]
    on_change: Callable[[], None] = lambda: None
    grants: set[tuple[str, str]] = field(default_factory=set)
    _open: _Question | None = None

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
        lines = [f"tool: {terminal_text(request.tool_name, one_line=True)}"]
        for key in ("command", "workdir", "file_path", "path", "pattern"):
            value = arguments.get(key)
            if isinstance(value, str):
                lines.append(f"{key}: {terminal_text(value, one_line=True)}")
        if arguments.get("run_in_background") is True:
            lines.append("runs in the background")
        if request.reason:
            lines.append(f"reason: {terminal_text(request.reason, one_line=True)}")
        for line in lines:
            self.console.print(Text(f"  {line}"))
        preview = edit_diff(request.tool_name, arguments, limit=_PREVIEW_LINES)
        for line in preview:
            self.console.print(Text(f"    {line}", style="dim"))
        self.console.print(Text(f"  answer: {ANSWER_HINT}", style="bold"))

    async def answer(self, request: ApprovalRequest) -> ApprovalOutcome | None:
        """Answer ``request``: at once under a grant of its kind, else ask."""
        kind = request_kind(request)
        if kind in self.grants:
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
                self.grants.add(kind)
                self.log_grant(request, kind)
                return "allowed-once"
            if choice in ("r", "n", "no"):
                if message.strip():
                    self.on_reject_message(request, message.strip())
                return "rejected"
            self.console.print(Text(f"  answer one of: {ANSWER_HINT}", style="yellow"))
