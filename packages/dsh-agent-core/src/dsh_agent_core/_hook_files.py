"""`hook_files`: the files configured command hooks run, kept read-only for confined commands.

Hooks run unconfined, with the user's rights. A script or program a hook runs that a confined
command could write would run the model's code outside the sandbox on the next hook, so every
file a hook command names goes into the sandbox policy's ``protected_paths`` (read-only whether
or not it exists yet; `.claude` and `.codex` are protected names already).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Mapping

from dsh_hooks import HOOK_EVENTS, HooksConfig

_INTERPRETERS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "fish", "python", "python3", "node", "deno", "bun"}
    | {"ruby", "perl", "php", "pwsh", "lua", "Rscript", "tclsh", "osascript"}
)
"""Programs whose first operand is a script they run (``bash guard.sh``, ``python3 x.py``)."""

_WRAPPERS = frozenset({"exec", "command", "env", "nice", "nohup", "builtin", "time"})
"""Words that run the next word as the program."""

_PROJECT_DIR = ("$CLAUDE_PROJECT_DIR", "${CLAUDE_PROJECT_DIR}")

_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def hook_files(hooks: HooksConfig | None, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The paths the command hooks of ``hooks`` run: each simple command's program and an
    interpreter's script, as absolute paths or relative to the workspace (a path under
    ``$CLAUDE_PROJECT_DIR``, or relative: hooks run in the session's cwd). A bare program name
    stands for that name in every ``PATH`` folder of ``environ``, since the hook's shell
    looks it up at each run (relative ``PATH`` folders are the workspace's). A command that
    does not parse as shell words names nothing."""
    if hooks is None:
        return ()
    project = hooks.project_dir
    search = [entry or "." for entry in environ.get("PATH", os.defpath).split(os.pathsep)]
    found: list[str] = []
    for event in HOOK_EVENTS:
        for group in hooks.hooks.groups(event):
            for hook in group.hooks:
                for word in _programs(hook.command):
                    found += _paths(word, project, search, environ)
    normal = (os.path.normpath(path) for path in found)
    return tuple(dict.fromkeys(p for p in normal if p != "." and not p.startswith("../")))


def _programs(command: str) -> Iterator[str]:
    """The program word of each simple command, and an interpreter's script operand."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        words = list(lexer)
    except ValueError:
        return
    expect_program = True
    interpreter = False
    for word in words:
        if word and all(c in "();<>|&" for c in word):
            expect_program, interpreter = True, False
            continue
        if expect_program:
            if "=" in word.split("/", 1)[0] or word in _WRAPPERS:
                continue  # an assignment or a wrapper: the program comes next
            expect_program = False
            interpreter = os.path.basename(word) in _INTERPRETERS
            yield word
        elif interpreter:
            if word == "-c" or word == "-e":
                interpreter = False  # inline code, no script
            elif not word.startswith("-"):
                interpreter = False
                yield word


def _paths(
    word: str, project: str | None, search: list[str], environ: Mapping[str, str]
) -> list[str]:
    for prefix in _PROJECT_DIR:
        if word == prefix or word.startswith(prefix + "/"):
            rest = word[len(prefix) :].lstrip("/") or "."
            if project is not None:
                return [os.path.join(project, rest)]
            return [] if rest == "." else [rest]
    expanded = os.path.expanduser(_expand(word, environ))
    if "$" in expanded or not expanded:
        return []  # names something this process cannot know
    if "/" in expanded:
        return [expanded]
    return [os.path.join(entry, expanded) for entry in search]


def _expand(word: str, environ: Mapping[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` replaced by ``environ``'s values (unknown ones kept)."""

    def value(match: re.Match[str]) -> str:
        return environ.get(match.group(1) or match.group(2), match.group(0))

    return _VARIABLE.sub(value, word)
