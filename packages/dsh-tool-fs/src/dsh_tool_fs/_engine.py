"""The work of one ``glob`` or ``grep`` that runs in Python: the walk, the ignore files, the
glob and regular-expression matching, and the reading of ripgrep's output.

All of it runs in a search worker process (`dsh_tool_fs._worker`), never in the harness's own:
Python's `re` holds the interpreter lock for as long as one match takes, and a nested repetition
(``(a+)+$``) or a hostile ignore line can take years, so the only safe way to bound it in time
and to cancel it is to kill the process it runs in. This module therefore imports nothing heavy
(no pydantic, no tool registry): the worker starts in about a tenth of a second.
"""

from __future__ import annotations

import base64
import json
import os
import re
import stat
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, TypeAlias, TypeVar

from dsh_tool_fs._ignore import (
    GlobMatcher,
    IgnoreIndex,
    SearchCancelled,
    path_allowed,
    walk_files,
)

if TYPE_CHECKING:  # the worker imports dsh_shell only when a request holds a policy
    from dsh_shell import SandboxPolicy

__all__ = [
    "RAW_OUTPUT_LIMIT",
    "SEARCH_TIME_BUDGET",
    "EngineError",
    "GlobRequest",
    "GrepRequest",
    "Hit",
    "OutputMode",
    "SearchScope",
    "overflow",
    "run_request",
]

RAW_OUTPUT_LIMIT = 20 * 1024 * 1024
"""Bytes of raw results (ripgrep's stdout, or the Python engine's collected lines) at most."""
SEARCH_TIME_BUDGET = 60.0
"""Seconds one ``glob`` or ``grep`` may take by default before it is stopped."""
_RG_BUFFER = 64 * 1024
"""ripgrep checks its first buffer for NUL; a larger matched file is checked again here."""
_LINE_BREAK = re.compile(r"(?<!\\)(?:\\\\)*\\n")

OutputMode: TypeAlias = Literal["files_with_matches", "content", "count"]
"""What ``grep`` returns: the matching files, the matching lines, or matching lines per file."""

GREP_NARROW = "narrow the pattern, the path or the include filter"
GLOB_NARROW = "search a narrower path or use a more specific pattern"

T = TypeVar("T")


class EngineError(Exception):
    """A search failed in a way the model should hear about: ``code`` is the tool error's code
    (``SEARCH_INVALID_PATTERN``, ``SEARCH_RAW_OUTPUT_OVERFLOW``, ``SEARCH_FAILED``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (EngineError, (self.code, self.message))


def overflow(advice: str = GREP_NARROW) -> EngineError:
    """The raw results passed `RAW_OUTPUT_LIMIT`."""
    return EngineError(
        "SEARCH_RAW_OUTPUT_OVERFLOW",
        f"the search produced more than {RAW_OUTPUT_LIMIT // (1024 * 1024)} MB of raw results; "
        + advice,
    )


@dataclass(slots=True)
class Hit:
    """One file with matches: its absolute path, matching lines, and (content) the lines."""

    path: str
    count: int = 0
    lines: list[tuple[int, bool, str]] = field(default_factory=list)
    mtime: int = 0


@dataclass(frozen=True, slots=True)
class SearchScope:
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


def _mtime(path: str) -> int | None:
    try:
        status = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return status.st_mtime_ns if stat.S_ISREG(status.st_mode) else None


def _newest_first(scope: SearchScope, items: Iterable[T], path_of: Callable[[T], str]) -> list[T]:
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


# -- ripgrep's output -----------------------------------------------------------------------


def _split_nul(stdout: bytes) -> list[str]:
    return [os.fsdecode(part) for part in stdout.split(b"\0") if part]


_COUNT_LINE = re.compile(rb"(.*?)\0(\d+)\r?\n", re.DOTALL)


def _rg_hits(stdout: bytes, mode: OutputMode) -> list[Hit]:
    if mode == "files_with_matches":
        return [Hit(path, count=1) for path in _split_nul(stdout)]
    if mode == "count":
        return [
            Hit(os.fsdecode(found.group(1)), count=int(found.group(2)))
            for found in _COUNT_LINE.finditer(stdout)
        ]
    hits: dict[str, Hit] = {}
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
        hit = hits.setdefault(path, Hit(path))
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


# -- the Python engine -----------------------------------------------------------------------


def _compile_regex(pattern: str, case_insensitive: bool) -> re.Pattern[str]:
    if "\n" in pattern or _LINE_BREAK.search(pattern):
        raise EngineError(
            "SEARCH_INVALID_PATTERN",
            f"invalid pattern {pattern!r}: it names a line break; grep matches within one line",
        )
    try:
        return re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
    except re.error as error:
        raise EngineError(
            "SEARCH_INVALID_PATTERN", f"invalid pattern {pattern!r}: {error}"
        ) from None
    except (OverflowError, RecursionError, ValueError) as error:
        raise EngineError(
            "SEARCH_INVALID_PATTERN", f"invalid pattern {pattern!r}: {error}"
        ) from None


class _Budget:
    """The raw results collected so far, bounded like ripgrep's output."""

    def __init__(self, advice: str = GREP_NARROW) -> None:
        self.used = 0
        self.advice = advice

    def spend(self, size: int) -> None:
        self.used += size
        if self.used > RAW_OUTPUT_LIMIT:
            raise overflow(self.advice)


def _search_file(
    path: str,
    regex: re.Pattern[str],
    mode: OutputMode,
    context: int,
    budget: _Budget,
    stop: threading.Event,
    policy: SandboxPolicy | None = None,
) -> Hit | None:
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
            hit = Hit(path)
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


# -- the requests ----------------------------------------------------------------------------


@dataclass(slots=True)
class GlobRequest:
    """One ``glob``: the files under ``scope`` matching ``pattern`` (root-relative), from
    ripgrep's ``--files --null`` output when ``rg_stdout`` is set, else from `walk_files`."""

    scope: SearchScope
    pattern: str
    rg_stdout: bytes | None = None


@dataclass(slots=True)
class GrepRequest:
    """One ``grep``: ``pattern`` in the files under ``scope`` (``include`` a root-relative glob
    or ``None``), from ripgrep's output for ``mode`` when ``rg_stdout`` is set."""

    scope: SearchScope
    pattern: str
    case_insensitive: bool
    include: str | None
    mode: OutputMode
    context: int
    rg_stdout: bytes | None = None


def _matcher(pattern: str, field_name: str) -> GlobMatcher:
    try:
        return GlobMatcher(pattern)
    except ValueError as error:
        raise EngineError(
            "SEARCH_INVALID_PATTERN", f"invalid glob in {field_name} ({pattern!r}): {error}"
        ) from None


def run_request(request: GlobRequest | GrepRequest) -> list[str] | list[Hit]:
    """The paths (``glob``) or hits (``grep``) of ``request``, newest first."""
    stop = threading.Event()  # never set: a worker is stopped by being killed
    if isinstance(request, GlobRequest):
        return _glob(request, stop)
    return _grep(request, stop)


def _glob(request: GlobRequest, stop: threading.Event) -> list[str]:
    scope = request.scope
    matcher = _matcher(request.pattern, "pattern")
    kept = []
    if request.rg_stdout is not None:
        index = IgnoreIndex(str(scope.root))
        for path in _split_nul(request.rg_stdout):
            rel = scope.relative(path)
            if index.excluded(rel) or not matcher.matches(rel):
                continue
            if path_allowed(scope.policy, path):
                kept.append(path)
    else:
        budget = _Budget(GLOB_NARROW)
        for path, rel in walk_files(str(scope.root), scope.policy, stop):
            if matcher.matches(rel):
                budget.spend(len(path) + 1)
                kept.append(path)
    return _newest_first(scope, kept, str)


def _grep(request: GrepRequest, stop: threading.Event) -> list[Hit]:
    scope = request.scope
    include = _matcher(request.include, "include") if request.include is not None else None
    if request.rg_stdout is not None:
        hits = _grep_ripgrep(request, include, stop)
    else:
        hits = _grep_python(request, include, stop)
    return _newest_first(scope, hits, lambda hit: hit.path)


def _grep_python(
    request: GrepRequest, include: GlobMatcher | None, stop: threading.Event
) -> list[Hit]:
    scope = request.scope
    regex = _compile_regex(request.pattern, request.case_insensitive)
    budget = _Budget()
    if scope.is_file:
        files: Iterable[tuple[str, str]] = [(str(scope.root), scope.root.name)]
    else:
        files = walk_files(str(scope.root), scope.policy, stop)
    found = []
    for path, rel in files:
        if include is not None and not include.matches(rel):
            continue
        hit = _search_file(path, regex, request.mode, request.context, budget, stop, scope.policy)
        if hit is not None:
            found.append(hit)
    return found


def _grep_ripgrep(
    request: GrepRequest, include: GlobMatcher | None, stop: threading.Event
) -> list[Hit]:
    scope = request.scope
    assert request.rg_stdout is not None
    if scope.is_file and _has_nul(str(scope.root), stop, scope.policy):
        return []  # ripgrep searches a named binary file; the directory walk skips it
    index = None if scope.is_file else IgnoreIndex(str(scope.root))
    kept = []
    for hit in _rg_hits(request.rg_stdout, request.mode):
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
    return kept
