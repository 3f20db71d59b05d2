"""``dsh run`` for scripts and CI: the prompt from standard input, ``--output json`` and
``stream-json``, and the exit status a script can branch on.

Standard output carries what a script reads and nothing else: the answer (``text``), one JSON
object at the end (``json``), or one JSON object per line as the turn runs (``stream-json``: the
session's events exactly as the log writes them, then the result object). Everything meant for
a person (tool calls, retries, usage, the session and its log) goes to standard error.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

import click

from dsh_agent_core.cli._common import fail
from dsh_agent_core.cli._terminal import discard, terminal_json_lines

if TYPE_CHECKING:
    from dsh_session import SessionEvent

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_COMPLETED",
    "EXIT_ERROR",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "OUTPUT_FORMATS",
    "PROMPT_LIMIT",
    "EventStream",
    "OutputFormat",
    "exit_code_of",
    "final_answer",
    "read_prompt",
    "result_line",
]

OutputFormat = Literal["text", "json", "stream-json"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("text", "json", "stream-json")
"""What ``dsh run --output`` accepts."""

EXIT_COMPLETED = 0
"""The turn completed (or stopped at the model's output limit, ``max-tokens``)."""
EXIT_ERROR = 1
"""The turn ended in an error (the model, a tool, ``--max-steps``), or dsh failed."""
EXIT_USAGE = 2
"""The command line was wrong: an unknown option, a missing or empty prompt."""
EXIT_REFUSED = 3
"""Refused before or during the turn: the sandbox cannot run here (nothing was started), or a
hook blocked the turn (its ``turn/end`` says ``blocked``)."""
EXIT_CANCELLED = 130
"""Cancelled by Ctrl-C (SIGINT); a SIGTERM ends with 143 and a SIGHUP with 129, as a shell
reports a process those signals killed."""

PROMPT_LIMIT = 1024 * 1024
"""The most bytes of prompt ``dsh run`` reads from standard input (1 MiB)."""


def read_prompt(prompt: str | None) -> str:
    """The prompt of ``dsh run``: ``prompt`` itself, or standard input when it is ``-`` or
    absent and standard input is not a terminal (at most :data:`PROMPT_LIMIT` bytes of
    UTF-8). Exits with status 2 and one line when there is none, it is empty or blank, too
    long, or not UTF-8."""
    if prompt is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError(
                "missing PROMPT (give it as an argument, or pipe it in: echo hi | dsh run)"
            )
        prompt = "-"
    if prompt == "-":
        prompt = _read_stdin()
    if not prompt.strip():
        fail("the prompt is empty: give the agent something to do", code=EXIT_USAGE)
    return prompt


def _read_stdin() -> str:
    stream = sys.stdin.buffer if sys.stdin is not None else None
    data = stream.read(PROMPT_LIMIT + 1) if stream is not None else b""
    if len(data) > PROMPT_LIMIT:
        fail(
            f"the prompt on standard input is longer than {PROMPT_LIMIT} bytes (1 MiB); "
            "put the material in a file and name it in the prompt",
            code=EXIT_USAGE,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        fail(f"the prompt on standard input is not UTF-8 ({error.reason} at byte {error.start})",
             code=EXIT_USAGE)  # fmt: skip


def exit_code_of(reason: Any, *, interrupted: bool = False) -> int:
    """The exit status of a turn that ended with ``reason`` (its ``turn/end`` reason object;
    ``interrupted``: the turn was cancelled by Ctrl-C)."""
    if interrupted:
        return EXIT_CANCELLED
    kind = reason.get("kind") if isinstance(reason, dict) else None
    if kind in ("completed", "max-tokens"):
        return EXIT_COMPLETED
    if kind == "blocked":
        return EXIT_REFUSED
    return EXIT_ERROR


def _text_of(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    return "".join(
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )


def final_answer(events: Iterable[SessionEvent], turn: Any) -> str:
    """The text of the last assistant message of ``turn`` (``""`` when it wrote none)."""
    from dsh_session import message_parts  # here: dsh --help imports no session model

    answer = ""
    for event in events:
        data: Any = event.data
        if event.type != "assistant/message" or not isinstance(data, dict):
            continue
        if data.get("turn") != turn:
            continue
        parts = message_parts(event.type, data)  # either message shape
        answer = _text_of(None if parts is None else parts.content)
    return answer


def result_line(result: dict[str, Any]) -> bytes:
    """``result`` as one compact JSON line (non-ASCII kept as UTF-8), newline included."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class EventStream:
    """A session subscriber writing each event to ``stream`` as the log writes it (its
    canonical JSON line, :func:`~dsh_session.encode_event`), flushed line by line. Into a
    terminal every line goes through :func:`terminal_json_lines` (the same JSON with the
    controls a terminal would interpret as ``\\uXXXX`` escapes). A reader that went away
    (``| head``) loses the rest quietly: the turn and its log go on."""

    def __init__(self, stream: BinaryIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stdout.buffer
        try:
            self._terminal = os.isatty(self._stream.fileno())
        except (AttributeError, OSError, ValueError):
            self._terminal = False
        self.closed = False

    def write(self, line: bytes) -> None:
        """Write one JSON line (ending in a newline) and flush it."""
        if self.closed:
            return
        if self._terminal:
            line = terminal_json_lines(line)
        try:
            self._stream.write(line)
            self._stream.flush()
        except (BrokenPipeError, ValueError):
            self.closed = True
            discard(self._stream)  # the interpreter's last flush is quiet too
        except OSError:
            self.closed = True

    def __call__(self, event: SessionEvent) -> None:
        """Write ``event`` (one that cannot be encoded is skipped: writing never stops a turn)."""
        from dsh_session import encode_event  # loaded by then: `dsh run --help` never needs it

        with contextlib.suppress(Exception):
            self.write(encode_event(event) + b"\n")
