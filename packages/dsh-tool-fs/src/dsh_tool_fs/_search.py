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
Files are listed newest first (modification time, then path). The Python work of every
search runs in a worker process (`dsh_tool_fs._worker`); the search as a whole (ripgrep and the
worker) ends within `FsSettings.search_budget` seconds, else ``SEARCH_TIMEOUT``.

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
import os
import shutil
import stat
from collections.abc import Awaitable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field, JsonValue, WithJsonSchema

from dsh_tool_fs._base import FileTool
from dsh_tool_fs._child_output import collect_output
from dsh_tool_fs._confinement import EscalationArgs
from dsh_tool_fs._engine import (
    GLOB_NARROW,
    GREP_NARROW,
    RAW_OUTPUT_LIMIT,
    SEARCH_TIME_BUDGET,
    EngineError,
    GlobRequest,
    GrepRequest,
    Hit,
    OutputMode,
    SearchScope,
    overflow,
)
from dsh_tool_fs._errors import FsToolError, SearchError
from dsh_tool_fs._ignore import RIPGREP_IGNORE_FLAGS, GlobMatcher
from dsh_tool_fs._schema import args_config
from dsh_tool_fs._worker import run_in_worker
from dsh_tools import ToolExecution, ToolResult

__all__ = [
    "GLOB_LIMIT",
    "GREP_HEAD_LIMIT",
    "GREP_MAX_CONTEXT",
    "GREP_MAX_HEAD_LIMIT",
    "GREP_MAX_LINE_BYTES",
    "RAW_OUTPUT_LIMIT",
    "SEARCH_TIME_BUDGET",
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
_STDERR_KEPT = 64 * 1024

_RG_PATTERN_ERRORS = ("regex parse error", "error parsing glob", "not allowed in a regex")

_OptionalPath = Annotated[str | None, WithJsonSchema({"type": "string"})]
_OptionalGlob = Annotated[str | None, WithJsonSchema({"type": "string"})]

T = TypeVar("T")


# -- parameters ------------------------------------------------------------------------------


class GlobArgs(BaseModel):
    """The ``glob`` tool's parameters."""

    model_config = args_config("glob")

    pattern: str = Field(
        min_length=1,
        description="E.g. `*.py` (any depth), `src/**/*.ts`, `*.{js,ts}`.",
    )
    path: _OptionalPath = Field(
        default=None,
        description="Directory to search (default: the workspace).",
    )


class GlobSandboxArgs(EscalationArgs, GlobArgs):
    """The ``glob`` tool's parameters under a sandbox."""

    model_config = args_config("glob")


class GrepArgs(BaseModel):
    """The ``grep`` tool's parameters."""

    model_config = args_config("grep")

    pattern: str = Field(min_length=1, description="Regex, matched within one line.")
    path: _OptionalPath = Field(
        default=None,
        description="File or directory to search (default: the workspace).",
    )
    include: _OptionalGlob = Field(
        default=None,
        description="Only files matching this glob.",
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description="Paths (newest first), matching lines (`N: line`), or counts per file.",
    )
    context: int = Field(
        default=0,
        ge=0,
        le=GREP_MAX_CONTEXT,
        description="Lines around each match (content mode).",
    )
    case_insensitive: bool = Field(default=False, description="Ignore case.")
    head_limit: int = Field(
        default=GREP_HEAD_LIMIT,
        ge=1,
        le=GREP_MAX_HEAD_LIMIT,
        description="Most entries shown.",
    )


class GrepSandboxArgs(EscalationArgs, GrepArgs):
    """The ``grep`` tool's parameters under a sandbox."""

    model_config = args_config("grep")


# -- shared pieces ---------------------------------------------------------------------------


def _pattern_error(message: str) -> EngineError:
    return EngineError("SEARCH_INVALID_PATTERN", message)


def _check_glob(pattern: str, field_name: str) -> None:
    """Refuse a glob that does not compile before anything runs (the worker matches it)."""
    try:
        GlobMatcher(pattern)
    except ValueError as error:
        raise SearchError(
            f"invalid glob in {field_name} ({pattern!r}): {error}", code="SEARCH_INVALID_PATTERN"
        ) from None


def _ripgrep_path(ripgrep: str | None) -> str | None:
    """The ripgrep executable to run, or ``None`` for the Python engine."""
    return shutil.which(ripgrep) if ripgrep else None


def _cut(line: str) -> str:
    line = line.removesuffix("\r")
    data = line.encode("utf-8", errors="surrogatepass")
    if len(data) <= GREP_MAX_LINE_BYTES:
        return line
    kept = data[:GREP_MAX_LINE_BYTES].decode("utf-8", errors="ignore")
    return f"{kept} ... (line truncated to {GREP_MAX_LINE_BYTES} bytes)"


def _more(shown: int, total: int, noun: str, advice: str) -> str:
    return f"(Showing {shown} of {total} {noun}; {total - shown} more not shown. {advice})"


def _resolve(tool: FileTool, args: Any, execution: ToolExecution) -> SearchScope:
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
    return SearchScope(root, is_file, policy)


async def _bounded(work: Awaitable[T], budget: float, what: str, advice: str) -> T:
    """``work`` within ``budget`` seconds; past it ``SEARCH_TIMEOUT`` naming ``what`` and the
    budget (whatever ``work`` started, ripgrep or a worker, is killed by the cancellation), and
    an `EngineError` as the `SearchError` it stands for."""
    deadline = asyncio.timeout(budget)
    try:
        async with deadline:
            return await work
    except TimeoutError:
        if not deadline.expired():
            raise
        raise SearchError(
            f"{what} did not finish within its time budget of {budget:g} s and was stopped; "
            f"{advice}",
            code="SEARCH_TIMEOUT",
        ) from None
    except EngineError as error:
        raise SearchError(error.message, code=error.code) from None


# -- ripgrep ---------------------------------------------------------------------------------


async def _run_rg(
    executable: str, argv: list[str], advice: str = GREP_NARROW
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
    stdout, stderr, status = await collect_output(
        process, limit=RAW_OUTPUT_LIMIT, overflow=lambda: overflow(advice), stderr_kept=_STDERR_KEPT
    )
    return stdout, stderr.decode("utf-8", errors="replace"), status


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
    raise EngineError(
        "SEARCH_FAILED", f"ripgrep failed (exit status {status}): {message or 'no message'}"
    )


# -- the tools -------------------------------------------------------------------------------


class GlobTool(FileTool):
    """``glob``: see the module docs."""

    name = "glob"
    description = (
        "Find files by gitignore-style glob, newest first. Honours ignore files; includes "
        "hidden files; skips .git."
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
        pattern = _anchored(args.pattern, scope.root)
        _check_glob(pattern, "pattern")
        executable = _ripgrep_path(self.settings.ripgrep)
        engine = "python" if executable is None else "ripgrep"

        async def search() -> list[str]:
            request = GlobRequest(scope, pattern)
            if executable is not None:
                argv = ["--files", *RIPGREP_IGNORE_FLAGS, "--null", "--", str(scope.root)]
                stdout, stderr, status = await _run_rg(executable, argv, GLOB_NARROW)
                _rg_failure(stdout, stderr, status)
                request.rg_stdout = stdout
            found = await run_in_worker(request, self.settings.search_budget)
            return [path for path in found if isinstance(path, str)]

        budget = self.settings.search_budget
        what = f"glob {args.pattern!r} in {scope.root}"
        paths = await _bounded(search(), budget, what, GLOB_NARROW)
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
        "Search file contents by regex. Honours ignore files; includes hidden files; skips "
        ".git and binary files."
    )
    plain_args = GrepArgs
    sandbox_args = GrepSandboxArgs

    def is_concurrency_safe(self, args: Any) -> bool:
        """Searches may run alongside each other."""
        return True

    async def execute(self, args: Any, execution: ToolExecution) -> ToolResult:
        """Search (see the module docs)."""
        scope = _resolve(self, args, execution)
        include = _anchored(args.include, scope.root) if args.include else None
        if include is not None:
            _check_glob(include, "include")
        mode: OutputMode = args.output_mode
        context = args.context if mode == "content" else 0
        # ripgrep runs outside the sandbox and opens files by name: under a confining mode the
        # Python engine searches, opening every file without following a swapped-in symlink
        unconfined = scope.policy is None or scope.policy.mode == "danger-full-access"
        executable = _ripgrep_path(self.settings.ripgrep) if unconfined else None
        engine = "python" if executable is None else "ripgrep"
        request = GrepRequest(scope, args.pattern, args.case_insensitive, include, mode, context)

        async def search() -> list[Hit]:
            if executable is not None:
                request.rg_stdout = await _ripgrep(executable, request)
            found = await run_in_worker(request, self.settings.search_budget)
            return [hit for hit in found if isinstance(hit, Hit)]

        budget = self.settings.search_budget
        what = f"grep for {args.pattern!r} in {scope.root}"
        advice = (
            f"{GREP_NARROW} (a nested repetition such as (a+)+ can take exponential time "
            "in the Python engine)"
        )
        hits = await _bounded(search(), budget, what, advice)
        text, total, shown = _render(scope, hits, mode, args.head_limit)
        meta: dict[str, JsonValue] = {"engine": engine, "total": total, "shown": shown}
        return ToolResult.ok(text, meta=meta)


async def _ripgrep(executable: str, request: GrepRequest) -> bytes:
    """ripgrep's output for ``request`` (the worker reads it)."""
    argv = [*RIPGREP_IGNORE_FLAGS, "--encoding", "none", "--color", "never"]
    argv.append("--ignore-case" if request.case_insensitive else "--case-sensitive")
    if request.mode == "files_with_matches":
        argv += ["--files-with-matches", "--null"]
    elif request.mode == "count":
        argv += ["--count", "--with-filename", "--null"]
    else:
        argv += ["--json"]
        if request.context:
            argv += ["--context", str(request.context)]
    argv += ["-e", request.pattern, "--", str(request.scope.root)]
    stdout, stderr, status = await _run_rg(executable, argv)
    _rg_failure(stdout, stderr, status)
    return stdout


def _render(
    scope: SearchScope, hits: list[Hit], mode: OutputMode, limit: int
) -> tuple[str, int, int]:
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
