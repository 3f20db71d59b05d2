"""The terminal's approval answerer: the command, the justification, allow once or reject."""

from __future__ import annotations

import asyncio

import click
from rich.console import Console
from rich.text import Text

from dsh_agent import ApprovalAnswerer, ApprovalOutcome, ApprovalRequest
from dsh_agent_core.cli._terminal import terminal_text

__all__ = ["shown", "terminal_answerer"]


def shown(text: str) -> str:
    """Model-written ``text`` for one line of the prompt: every control character (an escape
    sequence could move the cursor and overwrite the command the user is reading, a bidi
    override reorder it), newline and tab included, shown as its escape."""
    return terminal_text(text, one_line=True)


def _ask(console: Console, request: ApprovalRequest) -> ApprovalOutcome:
    console.print(Text("approval needed", style="bold"))
    lines = [f"tool: {shown(request.tool_name)}"]
    arguments = request.arguments or {}
    for key in ("command", "workdir"):
        value = arguments.get(key)
        if isinstance(value, str):
            lines.append(f"{key}: {shown(value)}")
    if arguments.get("run_in_background") is True:
        lines.append("runs in the background")
    if request.reason:
        lines.append(f"reason: {shown(request.reason)}")
    for line in lines:
        console.print(line, markup=False, highlight=False)
    choice = click.prompt(
        "allow once (a) or reject (r)",
        type=click.Choice(["a", "r"]),
        err=True,
        show_choices=False,
    )
    return "allowed-once" if choice == "a" else "rejected"


def terminal_answerer(console: Console) -> ApprovalAnswerer:
    """An answerer asking on this terminal (standard error for the question, standard input for
    the answer). There is no "allow always": each grant covers one call. A closed input
    (end of file) is ``unavailable``, never a grant."""
    lock = asyncio.Lock()  # one question at a time, even when calls run side by side

    async def answer(request: ApprovalRequest) -> ApprovalOutcome:
        async with lock:
            try:
                return await asyncio.to_thread(_ask, console, request)
            except (click.Abort, EOFError):
                return "unavailable"

    return answer
