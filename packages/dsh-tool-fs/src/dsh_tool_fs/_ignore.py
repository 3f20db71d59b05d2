"""The file set ``glob`` and ``grep`` search, defined here once for both engines:
gitignore-style globs and ignore files (via `pathspec`), and a walk that honours them.

The ignore files that count are `IGNORE_FILES`, in the search root and every directory below
it: ``.rgignore``, ``.ignore`` and ``.gitignore`` (ripgrep's own set; a git repository is not
required). Not the root's parents, not ``.git/info/exclude``, not the global gitignore
(``core.excludesFile``, ``~/.config/git/ignore``). Hidden files count; ``.git`` is skipped.

A line is matched the way git (and ripgrep's ``ignore`` crate) does: against the path relative
to the directory holding the file, a pattern without ``/`` matching the basename at any depth,
``**`` crossing directories, a trailing ``/`` matching directories only, the last matching line
of a file deciding. Per kind of file the nearest one with a matching line decides, and a
``.rgignore`` decision beats an ``.ignore`` one, which beats a ``.gitignore`` one (so
``!keep.log`` in a ``.ignore`` re-includes what a ``.gitignore`` ignores). A pattern matches
the path itself, never a path below it: descendants are excluded by not walking into an
ignored directory (so ``!pattern`` cannot re-include a file inside one, as in git). A nested
repository (a directory holding ``.git``) is no boundary: the rules above it still apply.

ripgrep walks with the same files enabled (`RIPGREP_IGNORE_FLAGS`); its list is then checked
against these rules again (`IgnoreIndex`), so a ripgrep that ignores less (13.x stops a
``.gitignore`` at a nested repository under ``--no-require-git``) yields the same set.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

import pathspec

if TYPE_CHECKING:  # the worker imports dsh_shell only when a request holds a policy
    from dsh_shell import SandboxPolicy

__all__ = [
    "IGNORE_FILES",
    "RIPGREP_IGNORE_FLAGS",
    "GlobMatcher",
    "IgnoreFile",
    "IgnoreIndex",
    "SearchCancelled",
    "expand_braces",
    "path_allowed",
    "walk_files",
]

IGNORE_FILES = (".rgignore", ".ignore", ".gitignore")
"""The ignore files that count, the deciding one first."""
SKIPPED_NAME = ".git"
RIPGREP_IGNORE_FLAGS = (
    "--no-config",
    "--no-ignore-global",
    "--no-ignore-parent",
    "--no-ignore-exclude",
    "--no-require-git",
    "--hidden",
    "--glob",
    "!.git",
)
"""The ripgrep flags that select the same file set (``.rgignore``, ``.ignore``, ``.gitignore``
below the root; hidden files; no ``.git``)."""
MAX_BRACE_ALTERNATIVES = 64

# pathspec's directory mark: a pattern's regex ends with one of these (1.x, then 0.12 forms).
# These regexes are not pathspec's public API, so pyproject.toml pins pathspec to the range
# tests/test_ignore_rules.py passes on (nox -s pathspec runs it on both ends).
_DIR_MARK = "ps_d"
_FILE_OR_DIR_SUFFIXES = ("(?:(?P<ps_d>/)|$)", "(?:(?P<ps_d>/).*)?$")
_DIR_ONLY_SUFFIXES = ("(?P<ps_d>/)", "(?P<ps_d>/).*$")


class SearchCancelled(Exception):
    """The search's task was cancelled; the worker thread stops at its next check."""


@dataclass(frozen=True, slots=True)
class _Rule:
    regex: re.Pattern[str]
    dir_only: bool
    exact: bool  # False: pathspec's own regex, judged by where its directory mark matched
    include: bool  # True: a plain line (ignore, or for a glob: select); False: "!" negation

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.exact:
            return self.regex.match(rel) is not None
        subject = rel + "/" if is_dir else rel
        found = self.regex.match(subject)
        if found is None:
            return False
        if _DIR_MARK not in self.regex.groupindex:
            return True
        end = found.end(_DIR_MARK)
        return end in (-1, len(subject))


def _rules(line: str) -> list[_Rule]:
    """The rules of one gitignore-style line (none for a blank line or a comment); raises
    ``ValueError`` or ``re.error`` for a line pathspec cannot compile."""
    rules: list[_Rule] = []
    for pattern in pathspec.GitIgnoreSpec.from_lines([line]).patterns:
        regex = getattr(pattern, "regex", None)
        if pattern.include is None or not isinstance(regex, re.Pattern):
            continue
        rules.append(_rule(regex, bool(pattern.include)))
    return rules


def _rule(regex: re.Pattern[str], include: bool) -> _Rule:
    source = regex.pattern
    if source in _DIR_ONLY_SUFFIXES:  # "**/": every directory
        return _Rule(re.compile("."), dir_only=True, exact=True, include=include)
    for suffixes, dir_only in ((_FILE_OR_DIR_SUFFIXES, False), (_DIR_ONLY_SUFFIXES, True)):
        for suffix in suffixes:
            if source.endswith(suffix):
                base = source[: -len(suffix)]
                return _Rule(re.compile(base + "$", regex.flags), dir_only, True, include)
    if _DIR_MARK in regex.groupindex:
        return _Rule(regex, dir_only=False, exact=False, include=include)
    return _Rule(regex, dir_only=False, exact=True, include=include)


def expand_braces(pattern: str) -> list[str]:
    """``pattern`` with each ``{a,b}`` group expanded (nested groups too; ``\\`` escapes a
    brace); a group without a comma stays literal. ``ValueError`` past
    `MAX_BRACE_ALTERNATIVES`."""
    start = _first_group(pattern)
    if start is None:
        return [pattern]
    open_at, close_at, commas = start
    head, tail = pattern[:open_at], pattern[close_at + 1 :]
    bounds = [open_at, *commas, close_at]
    results: list[str] = []
    for left, right in itertools.pairwise(bounds):
        for expanded in expand_braces(head + pattern[left + 1 : right] + tail):
            results.append(expanded)
            if len(results) > MAX_BRACE_ALTERNATIVES:
                raise ValueError(f"more than {MAX_BRACE_ALTERNATIVES} brace alternatives")
    return results


def _first_group(pattern: str) -> tuple[int, int, list[int]] | None:
    """The first top-level ``{...}`` holding a top-level comma: (open, close, commas)."""
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            group = _group_at(pattern, index)
            if group is not None:
                close_at, commas = group
                if commas:
                    return index, close_at, commas
        index += 1
    return None


def _group_at(pattern: str, open_at: int) -> tuple[int, list[int]] | None:
    depth = 0
    commas: list[int] = []
    index = open_at
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index, commas
        elif char == "," and depth == 1:
            commas.append(index)
        index += 1
    return None


class GlobMatcher:
    """A gitignore-style glob (``{a,b}`` alternatives expanded) as a file filter.

    ``pattern`` is one glob, never an ignore line: a leading ``!`` or ``#`` is literal.
    ``ValueError`` for a pattern that cannot match anything or does not compile.
    """

    def __init__(self, pattern: str) -> None:
        if "\0" in pattern or not pattern.strip():
            raise ValueError("the pattern is empty")
        self.pattern = pattern
        rules: list[_Rule] = []
        for alternative in expand_braces(pattern):
            line = alternative.strip()
            while line.startswith("./"):
                line = line[2:]
            if line[:1] in ("!", "#"):
                line = "\\" + line
            try:
                rules.extend(_rules(line))
            except (ValueError, re.error) as error:
                where = "" if alternative == pattern else f"{alternative!r}: "
                raise ValueError(f"{where}{error}") from None
        if not rules:
            raise ValueError("the pattern matches nothing")
        self._rules = tuple(rules)

    def matches(self, rel: str) -> bool:
        """Whether the file at ``rel`` (relative to the search root, ``/``-separated) fits."""
        return any(rule.matches(rel, False) for rule in self._rules)


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """The rules of one ignore file; ``base`` is its directory relative to the search root
    (``""`` or ending in ``/``)."""

    base: str
    rules: tuple[_Rule, ...]

    @classmethod
    def load(cls, directory: str, base: str, name: str) -> IgnoreFile | None:
        """``directory``'s ignore file ``name`` (a line that does not compile is skipped, as git
        and ripgrep do), or ``None`` without one."""
        try:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None  # a FIFO or device named .gitignore is never read
            with os.fdopen(os.dup(fd), "rb") as stream:
                data = stream.read(_IGNORE_FILE_CAP)
        except OSError:
            return None
        finally:
            os.close(fd)
        rules: list[_Rule] = []
        for line in data.decode("utf-8", errors="replace").splitlines():
            try:
                rules.extend(_rules(line))
            except (ValueError, re.error):
                continue
        return cls(base, tuple(rules)) if rules else None

    def decide(self, rel: str, is_dir: bool) -> bool | None:
        """``True`` ignored, ``False`` re-included (``!``), ``None`` no line matches."""
        sub = rel[len(self.base) :]
        for rule in reversed(self.rules):
            if rule.matches(sub, is_dir):
                return rule.include
        return None


_IGNORE_FILE_CAP = 16 * 1024 * 1024
"""Bytes of one ignore file read at most."""

_Level: TypeAlias = tuple["IgnoreFile | None", ...]
"""One directory's ignore files, in `IGNORE_FILES` order."""
_Chain: TypeAlias = tuple[_Level, ...]
"""The ignore files from the search root down to one directory."""


def _level(directory: str, base: str) -> _Level | None:
    level = tuple(IgnoreFile.load(directory, base, name) for name in IGNORE_FILES)
    return level if any(level) else None


def _ignored(chain: _Chain, rel: str, is_dir: bool) -> bool:
    for kind in range(len(IGNORE_FILES)):
        for level in reversed(chain):
            ignore = level[kind]
            decision = ignore.decide(rel, is_dir) if ignore is not None else None
            if decision is not None:
                return decision
    return False


def path_allowed(policy: SandboxPolicy | None, path: str) -> bool:
    """Whether ``policy`` lets ``path`` (absolute, resolved) be read."""
    return policy is None or policy.check(path, "read").allowed


def walk_files(
    root: str, policy: SandboxPolicy | None, stop: threading.Event
) -> Iterator[tuple[str, str]]:
    """Every regular file under the directory ``root`` as ``(absolute path, path relative to
    root)``: hidden files included, ``.git`` skipped, the `IGNORE_FILES` at and below ``root``
    honoured, symlinks never followed (nor listed), unreadable directories and paths
    ``policy`` denies for read skipped. Raises `SearchCancelled` once ``stop`` is set."""
    stack: list[tuple[str, str, _Chain]] = [(root, "", ())]
    while stack:
        if stop.is_set():
            raise SearchCancelled
        directory, base, chain = stack.pop()
        own = _level(directory, base)
        if own is not None:
            chain = (*chain, own)
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            continue
        below: list[tuple[str, str, _Chain]] = []
        for entry in entries:
            if entry.name == SKIPPED_NAME:
                continue
            try:
                if entry.is_symlink():
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                if not is_dir and not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            rel = base + entry.name
            if _ignored(chain, rel, is_dir) or not path_allowed(policy, entry.path):
                continue
            if is_dir:
                below.append((entry.path, rel + "/", chain))
            else:
                yield entry.path, rel
        stack.extend(reversed(below))


class IgnoreIndex:
    """The rules of `walk_files` for single paths under ``root`` (ripgrep's list checked
    again): each directory's ignore files loaded once."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._chains: dict[str, _Chain] = {}

    def excluded(self, rel: str) -> bool:
        """Whether `walk_files` would leave out the file at ``rel`` (``/``-separated, relative
        to the root): it or a directory on its way is ignored, or named ``.git``."""
        parts = rel.split("/")
        if SKIPPED_NAME in parts:
            return True
        base = ""
        chain = self._chain(base, ())
        for part in parts[:-1]:
            if _ignored(chain, base + part, True):
                return True
            base += part + "/"
            chain = self._chain(base, chain)
        return _ignored(chain, rel, False)

    def _chain(self, base: str, parent: _Chain) -> _Chain:
        """The ignore files from the root down to the directory ``base`` (``""`` or ending in
        ``/``), ``parent`` being those down to its parent."""
        chain = self._chains.get(base)
        if chain is None:
            own = _level(os.path.join(self.root, base), base)
            chain = parent if own is None else (*parent, own)
            self._chains[base] = chain
        return chain
