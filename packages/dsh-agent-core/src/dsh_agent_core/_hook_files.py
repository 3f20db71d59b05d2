"""`hook_files`: the files configured command hooks run, kept read-only for confined commands.

Hooks run unconfined, with the user's rights. A script, program or data file a hook uses that a
confined command could write would run the model's code outside the sandbox on the next hook,
so every file a hook command may name goes into the sandbox policy's ``protected_paths``
(read-only whether or not it exists yet; `.claude` and `.codex` are protected names already).

No attempt is made to know which word of a command is the program and which its script: shell
has too many forms (``bash -e x.sh``, ``timeout 5 ./x.sh``, ``. ./x.sh``, ``uv run x.py``,
``jq -f f.jq``, ``cd scripts && ./check.sh``, ``bash -c './x.sh'``...). Every word is taken
as a path it might be, and the ones that plausibly are one are kept.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Mapping

from dsh_hooks import HOOK_EVENTS, HooksConfig

_OPERATORS = frozenset("();<>|&`")
"""The characters shell words split at (``shlex`` punctuation, plus the backquote)."""

_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "in", "case"}
    | {"esac", "!", "{", "}", "[[", "]]", "function", "select", "time", "coproc"}
)
"""Reserved words after which the next word is a program."""

_WRAPPERS = frozenset(
    {"exec", "command", "builtin", "env", "nice", "nohup", "time", "timeout", "sudo", "doas"}
    | {"stdbuf", "flock", "xargs", "setsid", "ionice", "chrt", "taskset", "unbuffer"}
)
"""Programs that run another: not the program word themselves (their operands still count)."""

_SCRIPT = re.compile(r"\.(sh|bash|zsh|ksh|fish|py|js|mjs|cjs|ts|mts|rb|pl|php|lua|ps1)$")
"""Names that look like a script: protected even when missing and without a folder."""

_CHDIR = frozenset({"cd", "pushd", "-C", "--directory", "--chdir", "--cwd", "--prefix"})
"""Words whose next word is a folder the rest of the command works in."""

_IMPLICIT: dict[str, tuple[str, ...]] = {
    "make": ("Makefile", "makefile", "GNUmakefile"),
    "gmake": ("Makefile", "makefile", "GNUmakefile"),
    "just": ("justfile", "Justfile", ".justfile"),
    "npm": ("package.json",),
    "pnpm": ("package.json",),
    "yarn": ("package.json",),
    "bun": ("package.json",),
}
"""Programs that run what a file of their working folder says, whether or not it is named."""

_VARIABLE = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")

_SED = re.compile(r"[sy]/.*/[gimpe0-9]*$")
"""A sed expression (``s/a/b/g``): slashes, but no path."""

_PROJECT = "CLAUDE_PROJECT_DIR"

_SYSTEM = ("/dev/", "/proc/", "/sys/")
"""Absolute paths that are never a file a confined command could write."""

_MAX_DEPTH = 4
"""How deep ``bash -c '...'`` strings are opened."""


def hook_files(
    hooks: HooksConfig | None, environ: Mapping[str, str], cwd: str | None = None
) -> tuple[str, ...]:
    """The paths the command hooks of ``hooks`` may run or read, absolute or relative to the
    workspace (hooks run in the root session's cwd, ``$CLAUDE_PROJECT_DIR`` by default).

    Each command is split into shell words generously (operators split words; the strings of
    ``bash -c '...'`` and any word holding shell syntax are split again; ``$CLAUDE_PROJECT_DIR``,
    ``${CLAUDE_PROJECT_DIR}`` and ``${CLAUDE_PROJECT_DIR:-...}`` are the project dir, other
    variables ``environ``'s values). A word is kept as a path when it names a folder (it holds
    a ``/``: it may be created later), looks like a script (``x.sh``, ``x.py``, ...), or names
    an existing file or folder in the project dir or in ``cwd`` (default: the process's). Each
    word is also taken relative to every folder the command names (``cd scripts &&
    ./check.sh`` keeps ``scripts/check.sh``). A bare program name stands for that name in each
    ``PATH`` folder of ``environ`` (every folder for the program word of a simple command,
    else the folders that hold it), since the hook's shell looks it up at each run; ``make``,
    ``just`` and the node package managers add the file they read (``Makefile``,
    ``package.json``, ...), ``python -m pkg`` its module when it exists. A command
    that does not parse as shell words still has its plain words kept."""
    if hooks is None:
        return ()
    project = hooks.project_dir
    base = project if project is not None else (cwd if cwd is not None else os.getcwd())
    search = [entry or "." for entry in environ.get("PATH", os.defpath).split(os.pathsep)]
    found: list[str] = []
    for event in HOOK_EVENTS:
        for group in hooks.hooks.groups(event):
            for hook in group.hooks:
                found += _command_paths(hook.command, project, base, search, environ)
    kept: list[str] = []
    for path in found:
        normal = os.path.normpath(path)
        if normal == "." or normal == ".." or normal.startswith("../"):
            continue
        if normal == "/" or normal.startswith(_SYSTEM) or "\0" in normal:
            continue
        if os.path.isabs(normal) and os.path.isdir(normal):
            continue  # a folder outside the workspace may hold it: never protected whole
        kept.append(normal)
    return tuple(dict.fromkeys(kept))


def _command_paths(
    command: str,
    project: str | None,
    base: str,
    search: list[str],
    environ: Mapping[str, str],
) -> list[str]:
    words = list(_words(command, 0))
    programs = set(_program_words(command))
    expanded: list[tuple[str, bool]] = []
    folders: list[str] = []
    previous = ""
    for word in words:
        for part in _parts(word):
            value = _expand(part, project, environ)
            if value is None:
                continue
            expanded.append((value, part in programs))
            chdir = os.path.basename(previous) in _CHDIR or (
                part != word and word.split("=", 1)[0] in _CHDIR  # --directory=scripts
            )
            if chdir or _is_dir(value, base):
                folders.append(value)
        previous = word
    found: list[str] = []
    for index, (value, is_program) in enumerate(expanded):
        found += _candidates(value, base, folders, search, is_program=is_program)
        for directory in (".", *folders):
            names = _IMPLICIT.get(os.path.basename(value), ())
            present = [n for n in names if os.path.lexists(_at(os.path.join(directory, n), base))]
            found += [os.path.join(directory, n) for n in (present or names[:1])]
        if value == "-m" and index + 1 < len(expanded):  # python -m module
            module = expanded[index + 1][0].replace(".", "/")
            for path in (module + ".py", module):
                found += [
                    p
                    for p in (path, *(os.path.join(f, path) for f in folders))
                    if os.path.lexists(_at(p, base))
                ]
    return found


def _words(command: str, depth: int) -> Iterator[str]:
    """The shell words of ``command``, the words of nested command strings too."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars="();<>|&`")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote: the plain words still count
        words = command.replace("'", " ").replace('"', " ").split()
    for word in words:
        if not word or all(c in _OPERATORS for c in word):
            continue
        if depth < _MAX_DEPTH and (any(c.isspace() for c in word) or _OPERATORS & set(word)):
            yield from _words(word, depth + 1)  # bash -c '...', sh -c "...", $(...)
            continue
        yield word


def _program_words(command: str) -> Iterator[str]:
    """The words in a program's place: first of each simple command, after a keyword."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars="();<>|&`")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        words = list(lexer)
    except ValueError:
        return
    expect = True
    for word in words:
        if word and all(c in _OPERATORS for c in word):
            expect = True
        elif expect and ("=" in word.split("/", 1)[0] or word in _KEYWORDS | _WRAPPERS):
            continue  # an assignment or a reserved word: the program comes next
        elif expect:
            expect = False
            yield word


def _parts(word: str) -> Iterator[str]:
    """``word`` and, for ``--opt=value`` or ``NAME=value``, the value."""
    yield word
    if "=" in word:
        value = word.split("=", 1)[1]
        if value:
            yield value


def _expand(word: str, project: str | None, environ: Mapping[str, str]) -> str | None:
    """``word`` with its variables replaced, ``~`` expanded; ``None`` when it cannot be a path
    (an unknown variable, a URL, an option, a glob)."""
    unknown = False

    def value(match: re.Match[str]) -> str:
        nonlocal unknown
        name = match.group(1) or match.group(3)
        if name == _PROJECT:
            return project if project is not None else "."
        if name in environ:
            return environ[name]
        if match.group(2) is not None:
            return match.group(2)
        unknown = True
        return match.group(0)

    expanded = os.path.expanduser(_VARIABLE.sub(value, word))
    if unknown or not expanded or "$" in expanded or "://" in expanded or _SED.match(expanded):
        return None
    if expanded.startswith("-") or any(c in expanded for c in "*?[\n"):
        return None
    return expanded


def _candidates(
    value: str, base: str, folders: list[str], search: list[str], *, is_program: bool
) -> list[str]:
    """The paths ``value`` may name: itself and under each of ``folders``."""
    found: list[str] = []
    slash = "/" in value
    script = _SCRIPT.search(value) is not None
    if os.path.isabs(value):
        if not os.path.isdir(value):  # a folder of the system is not protected whole
            found.append(value)
        return found
    if slash or script or os.path.lexists(os.path.join(base, value)):
        found.append(value)
    for folder in folders:
        if folder == value:
            continue
        joined = os.path.join(folder, value)
        if slash or script or os.path.lexists(_at(joined, base)):
            found.append(joined)
    if not slash and value not in (".", ".."):
        for entry in search:
            path = os.path.join(entry, value)
            if is_program or os.path.lexists(_at(path, base)):
                found.append(path)
    return found


def _at(path: str, base: str) -> str:
    return path if os.path.isabs(path) else os.path.join(base, path)


def _is_dir(value: str, base: str) -> bool:
    return os.path.isdir(_at(value, base))
