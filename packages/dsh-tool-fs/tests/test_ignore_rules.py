"""The gitignore matcher on the pathspec versions it allows (issue 36 §6).

`_ignore` reads each line's rule from the regex pathspec generates for it, whose text is not
pathspec's public API; so dsh-tool-fs pins pathspec to the range these tests pass on
(``>=0.12.1,<1.2``; ``nox -s pathspec`` runs them on both ends). The first test fails on a
pathspec that writes a regex in a form this matcher does not know, the second on one whose
rules decide differently from git.
"""

from __future__ import annotations

import pathspec
import pytest

from dsh_tool_fs._ignore import (
    _DIR_MARK,
    _DIR_ONLY_SUFFIXES,
    _FILE_OR_DIR_SUFFIXES,
    IgnoreFile,
    _rules,
)

LINES = (
    "*.log",
    "build/",
    "/root.txt",
    "a/**/b",
    "**/node_modules",
    "doc/*.txt",
    "foo",
    "**/",
    "a/**",
    "!keep.log",
    "\\!bang",
    "[ab].txt",
    "logs/",
    "x/y/",
    "**",
    "/",
)

# (line, path relative to the ignore file's directory, is a directory, decision): True ignored,
# False re-included by "!", None no rule matches. Each decision is git's (`git check-ignore
# --no-index`), but for a path *below* a matched directory: git reports it ignored through its
# parent, while here a rule matches the path itself only and the walk never enters an ignored
# directory (so the outcome is the same).
DECISIONS = [
    ("*.log", "a/b.log", False, True),
    ("build/", "build", True, True),
    ("build/", "build", False, None),
    ("build/", "build/x.o", False, None),  # below: git True through build/
    ("/root.txt", "root.txt", False, True),
    ("/root.txt", "sub/root.txt", False, None),
    ("a/**/b", "a/x/y/b", False, True),
    ("a/**/b", "a/b", False, True),
    ("**/node_modules", "x/node_modules", True, True),
    ("doc/*.txt", "doc/a.txt", False, True),
    ("doc/*.txt", "doc/sub/a.txt", False, None),
    ("foo", "foo/bar", False, None),  # below: git True through foo
    ("foo", "x/foo", False, True),
    ("**/", "x", True, True),
    ("**/", "x", False, None),
    ("a/**", "a/x", False, True),
    ("a/**", "a/x/y", False, True),
    ("!keep.log", "keep.log", False, False),
    ("\\!bang", "!bang", False, True),
    ("[ab].txt", "b.txt", False, True),
    ("logs/", "x/logs", True, True),
    ("x/y/", "x/y", True, True),
]


@pytest.mark.parametrize("line", LINES)
def test_every_regex_pathspec_writes_is_in_a_form_the_matcher_knows(line: str) -> None:
    known = (*_FILE_OR_DIR_SUFFIXES, *_DIR_ONLY_SUFFIXES)
    for pattern in pathspec.GitIgnoreSpec.from_lines([line]).patterns:
        regex = getattr(pattern, "regex", None)
        if pattern.include is None or regex is None:
            continue
        if _DIR_MARK in regex.groupindex:
            assert regex.pattern.endswith(known), (
                f"pathspec {pathspec.__version__} writes {line!r} as {regex.pattern!r}, a "
                "directory mark in a form dsh_tool_fs._ignore does not know"
            )


@pytest.mark.parametrize(("line", "rel", "is_dir", "decision"), DECISIONS)
def test_a_rule_decides_as_git_does(
    line: str, rel: str, is_dir: bool, decision: bool | None
) -> None:
    rules = IgnoreFile("", tuple(_rules(line)))
    assert rules.decide(rel, is_dir) is decision, f"pathspec {pathspec.__version__}"
