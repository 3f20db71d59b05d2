"""How a tool call reads in an editor: its kind, title, locations and content.

Everything here comes from a model (the call's arguments) or a tool (its output): titles are one
line and bounded, tool output is kept as a bounded tail, paths are made absolute against the
session's working directory (ACP wants absolute paths)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acp import text_block, tool_content, tool_diff_content
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolKind,
)

__all__ = [
    "COMMAND_SHOWN_CHARS",
    "OUTPUT_TAIL_CHARS",
    "TITLE_CHARS",
    "CallContent",
    "CallView",
    "call_arguments",
    "call_view",
    "command_content",
    "one_line",
    "output_content",
]

TITLE_CHARS = 200
"""The most characters of a tool call's title."""
OUTPUT_TAIL_CHARS = 16 * 1024
"""The most characters of a tool's output shown as its content (the tail; the log has all)."""

CallContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
"""One item of a tool call's content."""

_KINDS: Mapping[str, ToolKind] = {
    "bash": "execute",
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "glob": "search",
    "grep": "search",
    "todo_write": "think",
}


@dataclass(frozen=True)
class CallView:
    """What an editor shows of one call before it runs."""

    title: str
    kind: ToolKind
    locations: list[ToolCallLocation]
    content: list[CallContent]
    raw_input: dict[str, Any]


def one_line(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def call_arguments(arguments: object) -> dict[str, Any]:
    """A call's arguments as logged (a JSON string or an object) as a dict; ``{}`` when they
    are not a JSON object."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return {}
    return dict(arguments) if isinstance(arguments, Mapping) else {}


def _absolute(path: str, cwd: str | None) -> str:
    if os.path.isabs(path) or cwd is None:
        return os.path.normpath(path)
    return os.path.normpath(os.path.join(cwd, path))


def _text(arguments: Mapping[str, Any], key: str) -> str | None:
    value = arguments.get(key)
    return value if isinstance(value, str) else None


def call_view(name: str, arguments: object, cwd: str | None) -> CallView:
    """The view of a call of tool ``name`` with ``arguments`` in a session working in ``cwd``:
    bash by its description or command, the file tools by their path (an edit or a write with
    its diff), searches by their pattern, any other tool by its name."""
    args = call_arguments(arguments)
    kind = _KINDS.get(name, "other")
    path = _text(args, "file_path") or _text(args, "path")
    absolute = _absolute(path, cwd) if path else None
    locations: list[ToolCallLocation] = []
    content: list[CallContent] = []
    if name == "bash":
        command = _text(args, "command") or ""
        title = one_line(_text(args, "description") or command or "bash")
    elif name in ("read", "write", "edit") and absolute is not None:
        verb = {"read": "Read", "write": "Write", "edit": "Edit"}[name]
        title = one_line(f"{verb} {absolute}")
        line = args.get("offset") if name == "read" else None
        locations.append(
            ToolCallLocation(path=absolute, line=line if isinstance(line, int) else None)
        )
        if name == "write":
            content.append(tool_diff_content(absolute, _text(args, "content") or ""))
        elif name == "edit":
            old, new = _text(args, "old_string"), _text(args, "new_string")
            content.append(tool_diff_content(absolute, new or "", old))
    elif name in ("glob", "grep"):
        pattern = _text(args, "pattern") or ""
        where = f" in {absolute}" if absolute else ""
        title = one_line(f"{name} {pattern}{where}")
        if absolute is not None:
            locations.append(ToolCallLocation(path=absolute))
    elif name == "todo_write":
        title = "Update the plan"  # the list itself arrives as the plan update
    else:
        title = one_line(name)
    return CallView(title, kind, locations, content, args)


COMMAND_SHOWN_CHARS = 64 * 1024
"""The most characters of a command an approval question shows (a longer one says so)."""


def command_content(command: str) -> ContentToolCallContent:
    """The whole command a bash call asks to run, fenced, for an approval question: the person
    asked must see what runs, never only the model's description of it."""
    shown = command
    if len(command) > COMMAND_SHOWN_CHARS:
        more = len(command) - COMMAND_SHOWN_CHARS
        shown = f"{command[:COMMAND_SHOWN_CHARS]}\n… ({more} more characters not shown)"
    return tool_content(text_block(_fenced(shown)))


def _fenced(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)  # longer than any run inside: the block cannot end early
    return f"{fence}\n{text.rstrip(chr(10))}\n{fence}"


def output_content(text: str) -> ContentToolCallContent:
    """A tool's output (its bounded tail) as a fenced block of tool-call content."""
    if len(text) > OUTPUT_TAIL_CHARS:
        text = "…" + text[-(OUTPUT_TAIL_CHARS - 1) :]
    return tool_content(text_block(_fenced(text)))
