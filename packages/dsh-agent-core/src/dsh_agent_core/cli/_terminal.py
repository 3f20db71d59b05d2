"""The one sanitizer between untrusted text and the terminal.

Everything ``dsh`` shows that came from a model, a tool, a hook or a log (streamed answers,
reasoning, tool calls and their output, approval prompts, transcripts, session titles, errors,
warnings, the configuration) reaches the terminal through :func:`terminal_text`: a control
character is *shown* as an escape (``\\x1b``, ``\\r``, ``\\x9b``, ``\\u202e``), never sent to
the terminal to interpret. What counts as a control:

- C0 (U+0000–U+001F) but newline and tab, so ``ESC ] 0 ; … ESC \\`` cannot set the title and
  ``ESC [ 2 J`` cannot clear the screen; carriage return is shown too (``\\r``: a lone one
  would return to the start of the line and let later text overwrite what came before it);
- DEL (U+007F) and C1 (U+0080–U+009F as code points: U+009B is a one-character CSI);
- the Unicode bidirectional controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069),
  which can make ``rm -rf ~ #`` read as something else in an approval prompt;
- lone surrogates (a log may hold them; they cannot be encoded for the terminal).

:class:`TerminalConsole` is the rich console of the ``dsh`` command: markup is off (a model
writing ``[link=…]`` gets those characters, not a hyperlink), every string it renders goes
through the sanitizer first, and every rendered segment is checked again, so a renderable built
elsewhere cannot carry a control through either. :func:`terminal_json` is the ``--json`` form
(those characters as ``\\uXXXX`` escapes), :class:`TerminalLogHandler` the form of log records.
A log's own JSON lines (``sessions show --raw``, ``sessions export`` to standard output) are
written byte for byte into a pipe or a file; to a terminal they go through
:func:`terminal_json_lines`: the same JSON with those characters as ``\\uXXXX`` escapes (a log
stores C1 and the bidirectional controls as raw UTF-8, which JSON does not escape).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

__all__ = [
    "TerminalConsole",
    "TerminalLogHandler",
    "discard",
    "terminal_json",
    "terminal_json_lines",
    "terminal_text",
    "terminal_text_of",
]

_CONTROLS = (
    "\x00-\x08\x0b-\x1f"  # C0 but tab and newline (carriage return included)
    "\x7f-\x9f"  # DEL and C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional controls
    "\ud800-\udfff"  # lone surrogates
)
_UNSAFE = re.compile(f"[{_CONTROLS}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    return _escaped(match.group())


def _escaped(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_text(text: str, *, one_line: bool = False) -> str:
    """``text`` safe to write to a terminal: every control character (see the module) replaced
    by its visible escape. With ``one_line`` (a field that must be read exactly, on one line:
    the command of an approval prompt, an error line) newline and tab are escaped too, and so
    is every other character Python does not consider printable (zero-width and other format
    characters, line and paragraph separators, unassigned code points), space excepted."""
    if one_line:
        return "".join(c if c.isprintable() or c == " " else _escaped(c) for c in text)
    return _UNSAFE.sub(_escape, text)


def terminal_text_of(text: str, style: str = "") -> Text:
    """A rich ``Text`` of untrusted ``text`` (sanitized, never parsed as markup) in ``style``."""
    return Text(terminal_text(text), style=style)


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def terminal_json(data: Any) -> str:
    """``data`` as indented JSON (non-ASCII text kept readable) in which every control character
    is a ``\\uXXXX`` escape: JSON escapes C0 itself, this adds DEL, C1, the bidirectional
    controls and lone surrogates. The text parses back to exactly ``data``."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return _UNSAFE.sub(_json_escape, text)  # outside strings JSON holds none of these


def terminal_json_lines(data: bytes) -> bytes:
    """JSON lines ``data`` (UTF-8) safe to write to a terminal: every control character but
    newline and tab as a ``\\uXXXX`` escape, so each line still parses to the same value (in
    JSON these characters can only stand inside strings, where the escape means the same); a
    byte that is not UTF-8 is shown as the escape of the surrogate standing for it."""
    text = data.decode("utf-8", errors="surrogateescape")
    return _UNSAFE.sub(_json_escape, text).encode("utf-8")


class TerminalConsole(Console):
    """A rich ``Console`` for untrusted text: no markup, no emoji codes, no highlighting, and
    every string and every rendered segment through :func:`terminal_text`."""

    def __init__(self, **options: Any) -> None:
        defaults = {"markup": False, "emoji": False, "highlight": False, "soft_wrap": True}
        super().__init__(**(defaults | options))

    def render_str(self, text: str, **options: Any) -> Text:
        """Sanitize ``text``, then let rich build its ``Text`` (markup stays off)."""
        return super().render_str(terminal_text(text), **options)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        """Render as rich does; a text segment that still holds a control is sanitized (rich's
        own control segments, such as a progress bar's cursor moves, pass as they are)."""
        for segment in super().render(renderable, options):
            if segment.control is None and _UNSAFE.search(segment.text) is not None:
                yield Segment(terminal_text(segment.text), segment.style)
            else:
                yield segment

    broken_pipe = False
    """Whether the reader of this console's stream went away (``dsh run | head``)."""

    def on_broken_pipe(self) -> None:
        """The reader of the stream went away: what is still written is discarded (the stream
        now leads to ``/dev/null``, so the interpreter's last flush is quiet too) and the
        command goes on; rich's default would raise ``SystemExit(1)`` from wherever the write
        happened (inside a session subscriber, that stopped the turn and its log)."""
        self.quiet = True
        self.broken_pipe = True
        discard(self.file)


def discard(stream: object) -> None:
    """Point the file descriptor of ``stream`` at ``/dev/null`` (what its closed reader would
    not read); nothing when it has none."""
    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (AttributeError, OSError, ValueError):
        return
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)


class TerminalLogHandler(logging.Handler):
    """Log records (warnings of the libraries ``dsh`` runs, which may quote a tool, a hook or
    a file name) written to ``console`` through the sanitizer, one record per line block."""

    def __init__(self, console: Console, level: int = logging.WARNING) -> None:
        super().__init__(level)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        """Write ``record`` (message and any traceback), controls shown."""
        try:
            text = self.format(record)
            self.console.print(terminal_text(text), markup=False, highlight=False)
        except Exception:  # a broken stream must not take the command down
            self.handleError(record)
