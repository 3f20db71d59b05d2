"""The terminal's approval answerer: the command, the justification, allow once or reject."""

from __future__ import annotations

import asyncio

import click
from rich.console import Console

from dsh_agent import ApprovalAnswerer, ApprovalOutcome, ApprovalRequest

__all__ = ["terminal_answerer"]


def _ask(console: Console, request: ApprovalRequest) -> ApprovalOutcome:
    console.print("[bold]approval needed[/bold]", highlight=False)
    console.print(f"tool: {request.tool_name}", markup=False)
    command = request.arguments.get("command") if request.arguments is not None else None
    if isinstance(command, str):
        console.print(f"command: {command}", markup=False)
    if request.reason:
        console.print(f"reason: {request.reason}", markup=False)
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
