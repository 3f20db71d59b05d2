"""How a tool call reads on a terminal: one line per call (``bash: <command>``,
``read: <path> (lines a–b)``, …) and the bounded unified diff an edit or a write makes. Shared
by the live session (:mod:`dsh_agent_core.cli._render`) and transcripts
(:mod:`dsh_agent_core.cli._transcript`)."""

from __future__ import annotations

import difflib
import json
from typing import Any

from dsh_agent_core.cli._terminal import terminal_text

__all__ = ["DIFF_LINES", "call_line", "edit_diff", "one_line"]

DIFF_LINES = 40
"""The most lines of a diff shown on the terminal (the whole edit stays in the log)."""


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def one_line(value: Any, limit: int = 160) -> str:
    """``value`` as one sanitized line of at most ``limit`` characters (cut with an ellipsis)."""
    text = terminal_text(str(value), one_line=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_line(name: str, raw_arguments: Any, *, limit: int = 160) -> str:
    """One readable line for a tool call: ``bash: <command>``, ``read: <path> (lines a–b)``,
    ``edit: <path>``, ``write: <path> (N lines)``, ``todo_write: N tasks``, else the name and its
    arguments in brief. ``limit`` bounds the command or path shown (a transcript passes a
    larger one)."""
    args = _arguments(raw_arguments)
    path = args.get("file_path") or args.get("path")
    if name == "bash" and "command" in args:
        return f"bash: {one_line(args['command'], limit)}"
    if name == "read" and path:
        offset, count = args.get("offset"), args.get("limit")
        if isinstance(offset, int) or isinstance(count, int):
            first = offset if isinstance(offset, int) else 1
            last = f"{first + count - 1}" if isinstance(count, int) else "end"
            return f"read: {one_line(path, limit)} (lines {first}–{last})"
        return f"read: {one_line(path, limit)}"
    if name == "edit" and path:
        return f"edit: {one_line(path, limit)}"
    if name == "write" and path:
        content = args.get("content")
        lines = len(content.splitlines()) if isinstance(content, str) else 0
        return f"write: {one_line(path, limit)} ({lines} lines)"
    if name == "todo_write" and isinstance(args.get("todos"), list):
        count = len(args["todos"])
        return f"todo_write: {count} task{'' if count == 1 else 's'}"
    if name in ("grep", "glob") and "pattern" in args:
        where = f" in {one_line(path, 80)}" if path else ""
        return f"{name}: {one_line(args['pattern'], 100)}{where}"
    brief = ", ".join(f"{key}={one_line(value, 60)}" for key, value in args.items())
    return f"{one_line(name, 60)}({one_line(brief, 140)})"


def edit_diff(name: str, raw_arguments: Any, limit: int = DIFF_LINES) -> list[str]:
    """The unified diff an ``edit`` (old → new text) or a ``write`` (its new content, as
    added lines) makes, at most ``limit`` lines with a note of what was left out."""
    args = _arguments(raw_arguments)
    path = str(args.get("file_path") or "")
    if name == "edit" and isinstance(args.get("old_string"), str):
        old = str(args["old_string"]).splitlines()
        new = str(args.get("new_string", "")).splitlines()
    elif name == "write" and isinstance(args.get("content"), str):
        old, new = [], str(args["content"]).splitlines()
    else:
        return []
    lines = list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", lineterm="", n=2))
    if len(lines) > limit:
        lines = [*lines[:limit], f"… ({len(lines) - limit} more diff lines in the log)"]
    return [terminal_text(line, one_line=True) for line in lines]
