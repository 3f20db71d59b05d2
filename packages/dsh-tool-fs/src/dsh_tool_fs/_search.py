"""``glob`` and ``grep``: find files by name, and lines by regular expression.

Both search the same file set under the search root: regular files, hidden ones included,
``.git`` skipped, the ``.rgignore``, ``.ignore`` and ``.gitignore`` files at and below the root
honoured (not global excludes, not ``.git/info/exclude``, not the root's parents; the rules are
`dsh_tool_fs._ignore`'s), symlinks neither followed nor listed, and whatever the session's
sandbox denies for read dropped silently.

Two engines give the same results: ripgrep, when `FsSettings.ripgrep` names an executable on
``PATH`` (it walks the tree and, for ``grep``, matches the lines), and a pure-Python one
(`dsh_tool_fs._ignore.walk_files` and `re`). The glob ``pattern`` and ``include`` filter are
always applied in Python (`GlobMatcher`): ripgrep's own ``--glob`` would override the
ignore files. ripgrep's list is checked against the ignore rules again (`IgnoreIndex`).
Files are listed newest first (modification time, then path).

Output (``path`` relative to the search root; the path itself when ``grep`` searched one file):

- ``glob``: one path per line, at most `GLOB_LIMIT`, then ``(Showing the N newest of M files;
  K more not shown. Narrow the pattern or the path.)``; ``No files found`` when none.
- ``grep`` ``files_with_matches``: one path per line; ``count``: ``path: N`` (matching lines);
  ``content``: per file its path, then ``N: line`` for a match and ``N- line`` for a context line,
  files separated by a blank line, a line longer than `GREP_MAX_LINE_BYTES` cut (UTF-8 safe)
  with `` ... (line truncated to 2000 bytes)``. At most ``head_limit`` entries (paths, counts or
  lines), then ``(Showing N of M <entries>; K more not shown. ...)``. ``No matches found`` when
  none. A file holding a NUL byte is binary and skipped.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import stat
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, WithJsonSchema

from dsh_shell import SandboxPolicy
from dsh_tool_fs._base import FileTool
from dsh_tool_fs._confinement import EscalationArgs
from dsh_tool_fs._errors import FsToolError, SearchError
from dsh_tool_fs._ignore import (
    RIPGREP_IGNORE_FLAGS,
    GlobMatcher,
    IgnoreIndex,
    SearchCancelled,
    path_allowed,
    walk_files,
)
from dsh_tools import ToolExecution, ToolResult

__all__ = [
    "GLOB_LIMIT",
    "GREP_HEAD_LIMIT",
    "GREP_MAX_CONTEXT",
    "GREP_MAX_HEAD_LIMIT",
    "GREP_MAX_LINE_BYTES",
    "RAW_OUTPUT_LIMIT",
    "GlobArgs",
    "GlobSandboxArgs",
    "GlobTool",
    "GrepArgs",
    "GrepSandboxArgs",
    "GrepTool",
    "OutputMode",
]

GLOB_LIMIT = 100
"""Paths one ``glob`` shows at most."""
GREP_HEAD_LIMIT = 250
"""Entries one ``grep`` shows by default."""
GREP_MAX_HEAD_LIMIT = 1000
"""The largest ``head_limit``."""
GREP_MAX_CONTEXT = 10
"""The most context lines before and after a match."""
GREP_MAX_LINE_BYTES = 2000
"""UTF-8 bytes kept of one shown line."""
RAW_OUTPUT_LIMIT = 20 * 1024 * 1024
"""Bytes of raw results (ripgrep's stdout, or the Python engine's collected lines) at most."""
_RG_BUFFER = 64 * 1024
"""ripgrep checks its first buffer for NUL; a larger matched file is checked again here."""
_STDERR_KEPT = 64 * 1024

OutputMode: TypeAlias = Literal["files_with_matches", "content", "count"]
"""What ``grep`` returns: the matching files, the matching lines, or matching lines per file."""
Engine: TypeAlias = Literal["ripgrep", "python"]

_RG_PATTERN_ERRORS = ("regex parse error", "error parsing glob", "not allowed in a regex")
_LINE_BREAK = re.compile(r"(?<!\\)(?:\\\\)*\\n")

_OptionalPath = Annotated[str | None, WithJsonSchema({"type": "string"})]
_OptionalGlob = Annotated[str | None, WithJsonSchema({"type": "string"})]

T = TypeVar("T")


# -- parameters ------------------------------------------------------------------------------


class GlobArgs(BaseModel):
    """The ``glob`` tool's parameters."""

    model_config = ConfigDict(title="glob", extra="forbid")

    pattern: str = Field(
        min_length=1,
        description=(
            "A gitignore-style glob, e.g. `*.py` (a pattern without `/` matches file names at "
            "any depth), `src/**/*.ts` (relative to the searched directory), `*.{js,ts}`."
        ),
    )
    path: _OptionalPath = Field(
        default=None,
        description="The directory to search: absolute, or relative to the workspace. "
        "Default: the workspace.",
    )


class GlobSandboxArgs(EscalationArgs, GlobArgs):
    """The ``glob`` tool's parameters under a sandbox."""

    model_config = ConfigDict(title="glob", extra="forbid")


class GrepArgs(BaseModel):
    """The ``grep`` tool's parameters."""

    model_config = ConfigDict(title="grep", extra="forbid")

    pattern: str = Field(
        min_length=1, description="The regular expression to find (matched within one line)."
    )
    path: _OptionalPath = Field(
        default=None,
        description="The file or directory to search: absolute, or relative to the workspace. "
        "Default: the workspace.",
    )
    include: _OptionalGlob = Field(
        default=None,
        description="Only files matching this glob, e.g. `*.py`, `*.{ts,tsx}`, `src/**/*.rs`.",
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description=(
            "`files_with_matches` (default): the paths of matching files; `content`: the "
            "matching lines, `N: line`, with `context`; `count`: matching lines per file."
        ),
    )
    context: int = Field(
        default=0,
        ge=0,
        le=GREP_MAX_CONTEXT,
        description="Lines shown before and after each match (content mode).",
    )
    case_insensitive: bool = Field(default=False, description="Ignore case.")
    head_limit: int = Field(
        default=GREP_HEAD_LIMIT,
        ge=1,
        le=GREP_MAX_HEAD_LIMIT,
        description=f"Entries (paths, counts or lines) shown at most; default {GREP_HEAD_LIMIT}.",
    )


class GrepSandboxArgs(EscalationArgs, GrepArgs):
    """The ``grep`` tool's parameters under a sandbox."""

    model_config = ConfigDict(title="grep", extra="forbid")


# -- shared pieces ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Hit:
    """One file with matches: its absolute path, matching lines, and (content) the lines."""

    path: str
    count: int = 0
    lines: list[tuple[int, bool, str]] = field(default_factory=list)
    mtime: int = 0


@dataclass(frozen=True, slots=True)
class _Scope:
    """Where one search runs: the resolved root, whether it is a file, the read policy."""

    root: Path
    is_file: bool
    policy: SandboxPolicy | None

    def relative(self, path: str) -> str:
        """``path`` relative to the root (``/``-separated); a file root: its own name."""
        if self.is_file:
            return self.root.name
        root = str(self.root)
        prefix = root if root.endswith("/") else root + "/"
        if path.startswith(prefix):
            return path[len(prefix) :]
        return os.path.relpath(path, root)

    def shown(self, path: str) -> str:
        """``path`` as the model sees it (an undecodable name byte becomes U+FFFD)."""
        text = str(self.root) if self.is_file else self.relative(path)
        return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def _pattern_error(message: str) -> SearchError:
    return SearchError(message, code="SEARCH_INVALID_PATTERN")


_GREP_NARROW = "narrow the pattern, the path or the include filter"
_GLOB_NARROW = "search a narrower path or use a more specific pattern"


def _overflow(advice: str = _GREP_NARROW) -> SearchError:
    return SearchError(
        f"the search produced more than {RAW_OUTPUT_LIMIT // (1024 * 1024)} MB of raw results; "
        + advice,
        code="SEARCH_RAW_OUTPUT_OVERFLOW",
    )


def _glob(pattern: str, field_name: str) -> GlobMatcher:
    try:
        return GlobMatcher(pattern)
    except ValueError as error:
        raise _pattern_error(f"invalid glob in {field_name} ({pattern!r}): {error}") from None


def _engine(ripgrep: str | None) -> str | None:
    """The ripgrep executable to run, or ``None`` for the Python engine."""
    return shutil.which(ripgrep) if ripgrep else None


async def _in_thread(work: Callable[[threading.Event], T]) -> T:
    """``work(stop)`` in a worker thread; cancelling the caller sets ``stop``."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(work, stop)
    except asyncio.CancelledError:
        stop.set()
        raise


def _mtime(path: str) -> int | None:
    try:
        status = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return status.st_mtime_ns if stat.S_ISREG(status.st_mode) else None


def _newest_first(scope: _Scope, items: Iterable[T], path_of: Callable[[T], str]) -> list[T]:
    dated: list[tuple[int, str, T]] = []
    for item in items:
        mtime = _mtime(path_of(item))
        if mtime is not None:
            dated.append((mtime, scope.relative(path_of(item)), item))
    dated.sort(key=lambda entry: (-entry[0], entry[1]))
    return [item for _, _, item in dated]


_LINE_CAP = 1 << 20
"""Bytes of one line the Python engine reads at most; the rest of a longer line is skipped."""


def _open_checked(path: str, policy: SandboxPolicy | None) -> BinaryIO | None:
    """``path`` opened for reading without following a symlink and without blocking on a FIFO,
    or ``None`` unless it is a regular file whose real path is ``path`` and readable under
    ``policy`` (a file swapped for a link after the walk is never read through)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            real = path
        if real != path or not path_allowed(policy, real):
            raise OSError("not the checked file")
    except OSError:
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def _bounded_lines(stream: BinaryIO) -> Iterator[bytes]:
    """The lines of ``stream``, each cut at `_LINE_CAP` bytes (the rest of it skipped)."""
    while raw := stream.readline(_LINE_CAP):
        if len(raw) == _LINE_CAP and not raw.endswith(b"\n"):
            while (rest := stream.readline(_LINE_CAP)) and not rest.endswith(b"\n"):
                pass
        yield raw


def _has_nul(path: str, stop: threading.Event, policy: SandboxPolicy | None = None) -> bool:
    stream = _open_checked(path, policy)
    if stream is None:
        return True
    try:
        with stream:
            while chunk := stream.read(1 << 20):
                if b"\0" in chunk:
                    return True
                if stop.is_set():
                    raise SearchCancelled
    except OSError:
        return True
    return False


def _cut(line: str) -> str:
    line = line.removesuffix("\r")
    data = line.encode("utf-8", errors="surrogatepass")
    if len(data) <= GREP_MAX_LINE_BYTES:
        return line
    kept = data[:GREP_MAX_LINE_BYTES].decode("utf-8", errors="ignore")
    return f"{kept} ... (line truncated to {GREP_MAX_LINE_BYTES} bytes)"


def _more(shown: int, total: int, noun: str, advice: str) -> str:
    return f"(Showing {shown} of {total} {noun}; {total - shown} more not shown. {advice})"


def _resolve(tool: FileTool, args: Any, execution: ToolExecution) -> _Scope:
    raw = args.path if args.path is not None else "."
    root = tool.target(args, execution, raw, "read", "path")
    shown = str(root)
    try:
        status = os.stat(root)
    except FileNotFoundError:
        raise FsToolError(f"{shown} does not exist", code="FS_NOT_FOUND", path=shown) from None
    except OSError as error:
        raise FsToolError(
            f"{shown} cannot be read: {error.strerror}", code="FS_IO", path=shown
        ) from None
    if stat.S_ISDIR(status.st_mode):
        is_file = False
    elif stat.S_ISREG(status.st_mode):
        is_file = True
    else:
        raise FsToolError(
            f"{shown} is neither a directory nor a regular file", code="FS_NOT_A_FILE", path=shown
        )
    policy = tool.confinement(args, execution).policy
    return _Scope(root, is_file, policy)


# -- ripgrep ---------------------------------------------------------------------------------


async def _run_rg(
    executable: str, argv: list[str], advice: str = _GREP_NARROW
) -> tuple[bytes, str, int]:
    """Run ripgrep (no shell) and return its stdout, stderr and exit status. Its stdout past
    `RAW_OUTPUT_LIMIT` kills it (``SEARCH_RAW_OUTPUT_OVERFLOW``); cancellation kills it too."""
    process = await asyncio.create_subprocess_exec(
        executable,
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    errors = asyncio.ensure_future(_drain(process.stderr))
    chunks: list[bytes] = []
    size = 0
    try:
        while chunk := await process.stdout.read(1 << 16):
            size += len(chunk)
            if size > RAW_OUTPUT_LIMIT:
                raise _overflow(advice)
            chunks.append(chunk)
        status = await process.wait()
        stderr = await errors
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with contextlib.suppress(BaseException):
            await process.wait()
        errors.cancel()
        raise
    return b"".join(chunks), stderr.decode("utf-8", errors="replace"), status


async def _drain(stream: asyncio.StreamReader) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(1 << 16):
        if len(kept) < _STDERR_KEPT:
            kept += chunk[: _STDERR_KEPT - len(kept)]
    return bytes(kept)


def _rg_failure(stdout: bytes, stderr: str, status: int) -> None:
    """Raise for a ripgrep run that failed as a whole; per-file errors (an unreadable file or
    directory) leave the rest of its results standing, as the Python engine skips them."""
    if status in (0, 1):
        return
    message = stderr.strip()
    if any(marker in message for marker in _RG_PATTERN_ERRORS):
        raise _pattern_error(f"invalid pattern: {message}")
    lines = [line for line in message.splitlines() if line.strip()]
    if stdout or (lines and all("(os error" in line for line in lines)):
        return
    raise SearchError(f"ripgrep failed (exit status {status}): {message or 'no message'}")


def _split_nul(stdout: bytes) -> list[str]:
    return [os.fsdecode(part) for part in stdout.split(b"\0") if part]


_COUNT_LINE = re.compile(rb"(.*?)\0(\d+)\r?\n", re.DOTALL)


def _rg_hits(stdout: bytes, mode: OutputMode) -> list[_Hit]:
    if mode == "files_with_matches":
        return [_Hit(path, count=1) for path in _split_nul(stdout)]
    if mode == "count":
        return [
            _Hit(os.fsdecode(found.group(1)), count=int(found.group(2)))
            for found in _COUNT_LINE.finditer(stdout)
        ]
    hits: dict[str, _Hit] = {}
    binary: set[str] = set()
    for raw in stdout.splitlines():
        if not raw.strip():
            continue
        message = json.loads(raw)
        kind = message.get("type")
        data = message.get("data") or {}
        if kind not in ("match", "context", "end"):
            continue
        path = _rg_text(data.get("path"))
        if kind == "end":
            if data.get("binary_offset") is not None:
                binary.add(path)
            continue
        hit = hits.setdefault(path, _Hit(path))
        text = _rg_text(data.get("lines"), decode=True)
        if text.endswith("\n"):
            text = text[:-1]
        if kind == "match":
            hit.count += 1
        hit.lines.append((int(data.get("line_number") or 0), kind == "match", text))
    return [hit for path, hit in hits.items() if hit.count and path not in binary]


def _rg_text(value: Any, *, decode: bool = False) -> str:
    """ripgrep's ``{"text": ...}`` or ``{"bytes": <base64>}``; bytes become a path (``os``'s
    encoding) or, with ``decode``, UTF-8 text with U+FFFD for invalid bytes."""
    if not isinstance(value, dict):
        return ""
    if "text" in value:
        return str(value["text"])
    data = base64.b64decode(str(value.get("bytes", "")))
    return data.decode("utf-8", errors="replace") if decode else os.fsdecode(data)


# -- Python engine ---------------------------------------------------------------------------


def _compile_regex(pattern: str, case_insensitive: bool) -> re.Pattern[str]:
    if "\n" in pattern or _LINE_BREAK.search(pattern):
        raise _pattern_error(
            f"invalid pattern {pattern!r}: it names a line break; grep matches within one line"
        )
    try:
        return re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
    except re.error as error:
        raise _pattern_error(f"invalid pattern {pattern!r}: {error}") from None
    except (OverflowError, RecursionError, ValueError) as error:
        raise _pattern_error(f"invalid pattern {pattern!r}: {error}") from None


class _Budget:
    """The raw results collected so far, bounded like ripgrep's output."""

    def __init__(self, advice: str = _GREP_NARROW) -> None:
        self.used = 0
        self.advice = advice

    def spend(self, size: int) -> None:
        self.used += size
        if self.used > RAW_OUTPUT_LIMIT:
            raise _overflow(self.advice)


def _search_file(
    path: str,
    regex: re.Pattern[str],
    mode: OutputMode,
    context: int,
    budget: _Budget,
    stop: threading.Event,
    policy: SandboxPolicy | None = None,
) -> _Hit | None:
    """The matches of ``regex`` in ``path`` line by line, or ``None`` (no match, binary,
    unreadable)."""
    stream = _open_checked(path, policy)
    if stream is None:
        return None
    with stream:
        try:
            if b"\0" in stream.read(8192):
                return None
            stream.seek(0)
            hit = _Hit(path)
            before: deque[tuple[int, str]] = deque(maxlen=context or 1)
            after = 0
            for number, raw in enumerate(_bounded_lines(stream), 1):
                if b"\0" in raw:
                    return None
                if number % 4096 == 0 and stop.is_set():
                    raise SearchCancelled
                if mode == "files_with_matches" and hit.count:
                    continue  # still read on: a later NUL makes the file binary
                text = raw.decode("utf-8", errors="replace")
                if text.endswith("\n"):
                    text = text[:-1]
                if regex.search(text) is not None:
                    hit.count += 1
                    if mode == "content":
                        while before:
                            previous, previous_text = before.popleft()
                            hit.lines.append((previous, False, previous_text))
                        hit.lines.append((number, True, text))
                        budget.spend(len(text) + 16)
                        after = context
                elif mode == "content" and context:
                    if after:
                        hit.lines.append((number, False, text))
                        budget.spend(len(text) + 16)
                        after -= 1
                    else:
                        before.append((number, text))
        except OSError:
            return None
    if not hit.count:
        return None
    budget.spend(len(path) + 16)
    return hit


# -- the tools -------------------------------------------------------------------------------


class GlobTool(FileTool):
    """``glob``: see the module docs."""

    name = "glob"
    description = (
        "Find files by name with a gitignore-style glob (`*.py`, `src/**/*.ts`, "
        "`*.{js,ts}`), newest first. Honours .gitignore, .ignore and .rgignore files; "
        "includes hidden files; skips .git. Use it rather than find or ls to locate files."
    )
    plain_args = GlobArgs
    sandbox_args = GlobSandboxArgs

    def is_concurrency_safe(self, args: Any) -> bool:
        """Searches may run alongside each other."""
        return True

    async def execute(self, args: Any, execution: ToolExecution) -> ToolResult:
        """List the matching files (see the module docs)."""
        scope = _resolve(self, args, execution)
        if scope.is_file:
            shown = str(scope.root)
            raise FsToolError(
                f"{shown} is a file, not a directory; glob searches a directory (use read for "
                "a file)",
                code="FS_NOT_A_DIRECTORY",
                path=shown,
            )
        matcher = _glob(_anchored(args.pattern, scope.root), "pattern")
        executable = _engine(self.settings.ripgrep)
        engine: Engine
        if executable is not None:
            engine = "ripgrep"
            stdout, stderr, status = await _run_rg(
                executable,
                ["--files", *RIPGREP_IGNORE_FLAGS, "--null", "--", str(scope.root)],
                _GLOB_NARROW,
            )
            _rg_failure(stdout, stderr, status)

            def collect(stop: threading.Event) -> list[str]:
                index = IgnoreIndex(str(scope.root))
                kept = []
                for path in _split_nul(stdout):
                    if stop.is_set():
                        raise SearchCancelled
                    rel = scope.relative(path)
                    if index.excluded(rel) or not matcher.matches(rel):
                        continue
                    if path_allowed(scope.policy, path):
                        kept.append(path)
                return _newest_first(scope, kept, str)

        else:
            engine = "python"

            def collect(stop: threading.Event) -> list[str]:
                budget = _Budget(_GLOB_NARROW)
                kept = []
                for path, rel in walk_files(str(scope.root), scope.policy, stop):
                    if matcher.matches(rel):
                        budget.spend(len(path) + 1)
                        kept.append(path)
                return _newest_first(scope, kept, str)

        paths = await _in_thread(collect)
        meta: dict[str, JsonValue] = {
            "engine": engine,
            "total": len(paths),
            "shown": min(len(paths), GLOB_LIMIT),
        }
        if not paths:
            return ToolResult.ok("No files found", meta=meta)
        lines = [scope.shown(path) for path in paths[:GLOB_LIMIT]]
        if len(paths) > GLOB_LIMIT:
            lines.append(
                f"(Showing the {GLOB_LIMIT} newest of {len(paths)} files; "
                f"{len(paths) - GLOB_LIMIT} more not shown. Narrow the pattern or the path.)"
            )
        return ToolResult.ok("\n".join(lines), meta=meta)


def _anchored(pattern: str, root: Path) -> str:
    """An absolute ``pattern`` under ``root`` made root-relative (``/root/src/*.py`` →
    ``/src/*.py``)."""
    prefix = str(root).rstrip("/") + "/"
    return "/" + pattern[len(prefix) :] if pattern.startswith(prefix) else pattern


class GrepTool(FileTool):
    """``grep``: see the module docs."""

    name = "grep"
    description = (
        "Search file contents with a regular expression (one line at a time). Output modes: "
        "`files_with_matches` (default, newest first), `content` (matching lines with line "
        "numbers, optional context), `count`. Filter files with `include` (a glob). Honours "
        ".gitignore, .ignore and .rgignore files; includes hidden files; skips .git and "
        "binary files. Use it rather than grep or rg in bash."
    )
    plain_args = GrepArgs
    sandbox_args = GrepSandboxArgs

    def is_concurrency_safe(self, args: Any) -> bool:
        """Searches may run alongside each other."""
        return True

    async def execute(self, args: Any, execution: ToolExecution) -> ToolResult:
        """Search (see the module docs)."""
        scope = _resolve(self, args, execution)
        include = _glob(_anchored(args.include, scope.root), "include") if args.include else None
        mode: OutputMode = args.output_mode
        context = args.context if mode == "content" else 0
        # ripgrep runs outside the sandbox and opens files by name: under a confining mode the
        # Python engine searches, opening every file without following a swapped-in symlink
        unconfined = scope.policy is None or scope.policy.mode == "danger-full-access"
        executable = _engine(self.settings.ripgrep) if unconfined else None
        if executable is not None:
            engine: Engine = "ripgrep"
            hits = await self._ripgrep(executable, scope, include, args, mode, context)
        else:
            engine = "python"
            regex = _compile_regex(args.pattern, args.case_insensitive)

            def collect(stop: threading.Event) -> list[_Hit]:
                budget = _Budget()
                if scope.is_file:
                    files: Iterable[tuple[str, str]] = [(str(scope.root), scope.root.name)]
                else:
                    files = walk_files(str(scope.root), scope.policy, stop)
                found = []
                for path, rel in files:
                    if stop.is_set():
                        raise SearchCancelled
                    if include is not None and not include.matches(rel):
                        continue
                    hit = _search_file(path, regex, mode, context, budget, stop, scope.policy)
                    if hit is not None:
                        found.append(hit)
                return _newest_first(scope, found, lambda hit: hit.path)

            hits = await _in_thread(collect)
        text, total, shown = _render(scope, hits, mode, args.head_limit)
        meta: dict[str, JsonValue] = {"engine": engine, "total": total, "shown": shown}
        return ToolResult.ok(text, meta=meta)

    async def _ripgrep(
        self,
        executable: str,
        scope: _Scope,
        include: GlobMatcher | None,
        args: Any,
        mode: OutputMode,
        context: int,
    ) -> list[_Hit]:
        if scope.is_file and await _in_thread(
            lambda stop: _has_nul(str(scope.root), stop, scope.policy)
        ):
            return []  # ripgrep searches a named binary file; the directory walk skips it
        argv = [*RIPGREP_IGNORE_FLAGS, "--encoding", "none", "--color", "never"]
        argv.append("--ignore-case" if args.case_insensitive else "--case-sensitive")
        if mode == "files_with_matches":
            argv += ["--files-with-matches", "--null"]
        elif mode == "count":
            argv += ["--count", "--with-filename", "--null"]
        else:
            argv += ["--json"]
            if context:
                argv += ["--context", str(context)]
        argv += ["-e", args.pattern, "--", str(scope.root)]
        stdout, stderr, status = await _run_rg(executable, argv)
        _rg_failure(stdout, stderr, status)

        def collect(stop: threading.Event) -> list[_Hit]:
            index = None if scope.is_file else IgnoreIndex(str(scope.root))
            kept = []
            for hit in _rg_hits(stdout, mode):
                if stop.is_set():
                    raise SearchCancelled
                rel = scope.relative(hit.path)
                if index is not None and index.excluded(rel):
                    continue
                if include is not None and not include.matches(rel):
                    continue
                if not path_allowed(scope.policy, hit.path):
                    continue
                try:
                    large = os.stat(hit.path).st_size > _RG_BUFFER
                except OSError:
                    continue
                if large and _has_nul(hit.path, stop):
                    continue
                kept.append(hit)
            return _newest_first(scope, kept, lambda hit: hit.path)

        return await _in_thread(collect)


def _render(scope: _Scope, hits: list[_Hit], mode: OutputMode, limit: int) -> tuple[str, int, int]:
    """The text of ``hits`` (newest first), at most ``limit`` entries; with the number of
    entries in all and shown."""
    if not hits:
        return "No matches found", 0, 0
    advice = "Narrow the pattern, the path or include, or raise head_limit."
    if mode == "files_with_matches":
        entries = [scope.shown(hit.path) for hit in hits]
        return _listed(entries, limit, "files", advice)
    if mode == "count":
        entries = [f"{scope.shown(hit.path)}: {hit.count}" for hit in hits]
        return _listed(entries, limit, "files", advice)
    total = sum(len(hit.lines) for hit in hits)
    blocks: list[str] = []
    shown = 0
    for hit in hits:
        if shown >= limit:
            break
        taken = hit.lines[: limit - shown]
        shown += len(taken)
        body = [f"{number}{':' if match else '-'} {_cut(text)}" for number, match, text in taken]
        blocks.append("\n".join([scope.shown(hit.path), *body]))
    text = "\n\n".join(blocks)
    if total > shown:
        text += "\n\n" + _more(shown, total, "lines", advice)
    return text, total, shown


def _listed(entries: list[str], limit: int, noun: str, advice: str) -> tuple[str, int, int]:
    shown = entries[:limit]
    text = "\n".join(shown)
    if len(entries) > limit:
        text += "\n" + _more(limit, len(entries), noun, advice)
    return text, len(entries), len(shown)
