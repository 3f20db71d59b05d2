"""glob and grep with real files, each behaviour under both engines (ripgrep and pure Python):
pattern semantics, newest-first order, .gitignore rules, hidden files, .git, caps, grep's
modes, errors, the sandbox, and the two engines agreeing on a mixed tree."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from dsh_shell import SandboxPolicy
from dsh_tool_fs import FsSettings
from dsh_tool_fs._search import (
    GLOB_LIMIT,
    GREP_MAX_LINE_BYTES,
    GlobTool,
    GrepTool,
)
from dsh_tools import ToolCall, ToolExecution, ToolRegistry, ToolResult
from support import Caller, code

ENGINE_NAMES = {"python": "python", "rg": "ripgrep"}
RG_MISSING = "ripgrep (rg) is not on PATH: install it (apt-get install ripgrep)"


@pytest.fixture(params=["python", "rg"])
def engine(request: pytest.FixtureRequest) -> str:
    """Each behaviour test runs once per engine; the ripgrep run fails when rg is missing."""
    name: str = request.param
    if name == "rg":
        assert shutil.which("rg"), RG_MISSING
    return name


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


def settings_for(engine: str, sandbox: SandboxPolicy | None = None) -> FsSettings:
    return FsSettings(sandbox=sandbox, ripgrep=None if engine == "python" else "rg")


async def call(
    engine: str, cwd: Path, name: str, *, sandbox: SandboxPolicy | None = None, **arguments: Any
) -> ToolResult:
    """One call through a registry holding glob and grep; checks which engine ran."""
    settings = settings_for(engine, sandbox)
    registry = ToolRegistry()
    registry.register(GlobTool(settings))
    registry.register(GrepTool(settings))
    result = await registry.execute(
        ToolCall("c1", name, json.dumps(arguments)), caller=Caller.at(cwd)
    )
    if not result.is_error:
        assert isinstance(result.meta, dict)
        expected = ENGINE_NAMES[engine]
        if name == "grep" and sandbox is not None and sandbox.mode != "danger-full-access":
            expected = "python"  # ripgrep is unconfined: a confined grep never runs it
        assert result.meta["engine"] == expected
    return result


def write(root: Path, rel: str, text: str = "x\n", *, mtime: int | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, ns=(mtime * 10**9, mtime * 10**9))
    return path


def lines(result: ToolResult) -> list[str]:
    assert not result.is_error, result.text
    return result.text.split("\n")


# -- glob ------------------------------------------------------------------------------------


async def test_glob_pattern_without_slash_matches_names_at_any_depth(
    engine: str, work: Path
) -> None:
    write(work, "a.py", mtime=3)
    write(work, "src/b.py", mtime=2)
    write(work, "src/deep/c.py", mtime=1)
    write(work, "src/notes.txt", mtime=4)
    assert lines(await call(engine, work, "glob", pattern="*.py")) == [
        "a.py",
        "src/b.py",
        "src/deep/c.py",
    ]


async def test_glob_pattern_with_slash_is_relative_to_the_root(engine: str, work: Path) -> None:
    write(work, "src/b.py", mtime=3)
    write(work, "src/deep/c.py", mtime=2)
    write(work, "other/src/d.py", mtime=1)
    assert lines(await call(engine, work, "glob", pattern="src/*.py")) == ["src/b.py"]
    assert lines(await call(engine, work, "glob", pattern="src/**/*.py")) == [
        "src/b.py",
        "src/deep/c.py",
    ]
    assert lines(await call(engine, work, "glob", pattern="**/src/*.py")) == [
        "src/b.py",
        "other/src/d.py",
    ]
    assert lines(await call(engine, work, "glob", pattern="src/**")) == [
        "src/b.py",
        "src/deep/c.py",
    ]


async def test_glob_lists_files_never_directories(engine: str, work: Path) -> None:
    write(work, "src/b.py")
    result = await call(engine, work, "glob", pattern="src")
    assert result.text == "No files found"
    assert not result.is_error


async def test_glob_braces_character_classes_and_literal_bang(engine: str, work: Path) -> None:
    write(work, "a.ts", mtime=4)
    write(work, "b.tsx", mtime=3)
    write(work, "c.js", mtime=2)
    write(work, "!bang.txt", mtime=1)
    assert lines(await call(engine, work, "glob", pattern="*.{ts,tsx}")) == ["a.ts", "b.tsx"]
    assert lines(await call(engine, work, "glob", pattern="[ab].*")) == ["a.ts", "b.tsx"]
    assert lines(await call(engine, work, "glob", pattern="!bang.*")) == ["!bang.txt"]


async def test_glob_path_searches_that_directory_and_shows_paths_relative_to_it(
    engine: str, work: Path
) -> None:
    write(work, "src/b.py", mtime=2)
    write(work, "src/deep/c.py", mtime=1)
    write(work, "top.py")
    assert lines(await call(engine, work, "glob", pattern="*.py", path="src")) == [
        "b.py",
        "deep/c.py",
    ]
    absolute = await call(engine, Path("/"), "glob", pattern="*.py", path=str(work / "src"))
    assert lines(absolute) == ["b.py", "deep/c.py"]


async def test_glob_is_newest_first(engine: str, work: Path) -> None:
    write(work, "old.txt", mtime=1_000)
    write(work, "new.txt", mtime=3_000)
    write(work, "sub/mid.txt", mtime=2_000)
    write(work, "sub/tie-b.txt", mtime=500)
    write(work, "tie-a.txt", mtime=500)
    assert lines(await call(engine, work, "glob", pattern="*.txt")) == [
        "new.txt",
        "sub/mid.txt",
        "old.txt",
        "sub/tie-b.txt",
        "tie-a.txt",
    ]


async def test_glob_honours_gitignore_files_with_nesting_and_negation(
    engine: str, work: Path
) -> None:
    (work / ".gitignore").write_text("build/\n*.log\n!keep.log\n# a comment\n/rooted.txt\n")
    write(work, "build/out.txt")
    write(work, "x.log")
    write(work, "keep.log")
    write(work, "rooted.txt")
    write(work, "sub/rooted.txt")
    write(work, "sub/y.log")
    write(work, "sub/z.log")
    write(work, "sub/.gitignore", "!y.log\nsecret.txt\n")
    write(work, "sub/secret.txt")
    write(work, "secret.txt")
    write(work, "sub/deeper/y.log")
    found = sorted(lines(await call(engine, work, "glob", pattern="*")))
    assert found == sorted(
        [
            ".gitignore",
            "keep.log",
            "secret.txt",
            "sub/.gitignore",
            "sub/rooted.txt",
            "sub/y.log",
            "sub/deeper/y.log",
        ]
    )


async def test_glob_negation_cannot_reach_into_an_ignored_directory(
    engine: str, work: Path
) -> None:
    (work / ".gitignore").write_text("vendor/\n!vendor/keep.txt\n*.tmp\n!important/\n")
    write(work, "vendor/keep.txt")
    write(work, "important/a.tmp")
    write(work, "important/b.txt")
    assert lines(await call(engine, work, "glob", pattern="*.txt")) == ["important/b.txt"]
    assert (await call(engine, work, "glob", pattern="*.tmp")).text == "No files found"


async def test_glob_ignores_gitignore_files_above_the_root(engine: str, work: Path) -> None:
    (work / ".gitignore").write_text("*.log\n")
    write(work, "sub/a.log")
    assert (await call(engine, work, "glob", pattern="*.log")).text == "No files found"
    assert lines(await call(engine, work, "glob", pattern="*.log", path="sub")) == ["a.log"]


@pytest.mark.parametrize("name", [".gitignore", ".ignore", ".rgignore"])
async def test_each_ignore_file_counts(engine: str, work: Path, name: str) -> None:
    write(work, name, "*.log\nbuild/\n")
    write(work, "sub/" + name, "!keep.log\n")
    for rel in ("a.log", "build/b.txt", "sub/c.log", "sub/keep.log", "d.txt"):
        write(work, rel, "needle\n")
    expected = ["d.txt", "sub/keep.log"]
    assert sorted(lines(await call(engine, work, "glob", pattern="*.{txt,log}"))) == expected
    assert sorted(lines(await call(engine, work, "grep", pattern="needle"))) == expected


async def test_rgignore_beats_ignore_beats_gitignore(engine: str, work: Path) -> None:
    write(work, ".gitignore", "*.a\n*.b\n!*.c\n")
    write(work, ".ignore", "!*.a\n*.c\n!*.d\n")
    write(work, ".rgignore", "*.d\n")
    write(work, "deep/.gitignore", "!*.b\n")  # nearer, but only against the other .gitignore
    write(work, "deep/.rgignore", "!x.d\n")  # the nearest .rgignore decides
    for rel in ("x.a", "x.b", "x.c", "x.d", "deep/x.a", "deep/x.b", "deep/x.c", "deep/x.d"):
        write(work, rel, "needle\n")
    expected = ["deep/x.a", "deep/x.b", "deep/x.d", "x.a"]
    assert sorted(lines(await call(engine, work, "glob", pattern="x.*"))) == expected
    assert sorted(lines(await call(engine, work, "grep", pattern="needle"))) == expected


async def test_a_nested_repository_keeps_the_rules_above_it(engine: str, work: Path) -> None:
    write(work, ".gitignore", "*.log\n")
    write(work, ".ignore", "*.tmp\n")
    (work / "nested" / ".git").mkdir(parents=True)
    write(work, "worktree/.git", "gitdir: /elsewhere\n")
    for rel in ("nested/a.log", "nested/b.tmp", "worktree/c.log", "nested/d.txt"):
        write(work, rel, "needle\n")
    assert lines(await call(engine, work, "glob", pattern="*.{log,tmp,txt}")) == ["nested/d.txt"]
    assert lines(await call(engine, work, "grep", pattern="needle")) == ["nested/d.txt"]


async def test_git_exclude_global_gitignore_and_parents_do_not_count(
    engine: str, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(work, ".git/info/exclude", "excluded.txt\n")
    config = tmp_path / "config"
    write(config, "git/ignore", "global.txt\n")
    write(tmp_path / "home", ".gitconfig", f"[core]\n\texcludesFile = {config}/git/ignore\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write(tmp_path, ".gitignore", "parent.txt\n")
    write(tmp_path, ".ignore", "parent.txt\n")
    for rel in ("excluded.txt", "global.txt", "parent.txt"):
        write(work, rel, "needle\n")
    expected = ["excluded.txt", "global.txt", "parent.txt"]
    assert sorted(lines(await call(engine, work, "glob", pattern="*.txt"))) == expected
    assert sorted(lines(await call(engine, work, "grep", pattern="needle"))) == expected


@pytest.mark.parametrize("name", [".gitignore", ".ignore", ".rgignore"])
async def test_an_ignore_file_that_is_a_fifo_is_not_read(work: Path, name: str) -> None:
    os.mkfifo(work / name)  # ripgrep blocks on it: its time budget ends that search
    write(work, "a.txt", "needle\n")
    assert lines(await call("python", work, "grep", pattern="needle")) == ["a.txt"]


async def test_glob_includes_hidden_files_and_skips_git(engine: str, work: Path) -> None:
    write(work, ".env", mtime=4)
    write(work, ".config/tool.toml", mtime=3)
    write(work, ".git/config")
    write(work, ".git/objects/ab/cdef")
    write(work, "nested/.git", "gitdir: elsewhere\n")
    write(work, "nested/file.txt", mtime=2)
    assert lines(await call(engine, work, "glob", pattern="*")) == [
        ".env",
        ".config/tool.toml",
        "nested/file.txt",
    ]


async def test_glob_does_not_follow_symlinks(engine: str, work: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.py")
    write(work, "real.py")
    (work / "linked-dir").symlink_to(outside, target_is_directory=True)
    (work / "linked.py").symlink_to(work / "real.py")
    assert lines(await call(engine, work, "glob", pattern="*.py")) == ["real.py"]


async def test_glob_caps_at_100_paths_and_says_how_many_more(engine: str, work: Path) -> None:
    for index in range(GLOB_LIMIT + 5):
        write(work, f"f{index:03}.txt", mtime=10_000 + index)
    shown = lines(await call(engine, work, "glob", pattern="*.txt"))
    assert len(shown) == GLOB_LIMIT + 1
    assert shown[0] == "f104.txt"
    assert shown[GLOB_LIMIT - 1] == "f005.txt"
    assert shown[-1] == (
        "(Showing the 100 newest of 105 files; 5 more not shown. Narrow the pattern or the path.)"
    )


async def test_glob_errors_name_the_problem(engine: str, work: Path) -> None:
    write(work, "a.txt")
    missing = await call(engine, work, "glob", pattern="*", path="nowhere")
    assert code(missing) == "FS_NOT_FOUND"
    assert str(work / "nowhere") in missing.text
    on_file = await call(engine, work, "glob", pattern="*", path="a.txt")
    assert code(on_file) == "FS_NOT_A_DIRECTORY"
    bad = await call(engine, work, "glob", pattern="[z-a].txt")
    assert code(bad) == "SEARCH_INVALID_PATTERN"
    assert "[z-a].txt" in bad.text
    empty = await call(engine, work, "glob", pattern="")
    assert code(empty) == "INVALID_ARGS"


# -- grep ------------------------------------------------------------------------------------


@pytest.fixture
def code_tree(work: Path) -> Path:
    write(work, "src/app.py", "import os\n\ndef main():\n    return os.getcwd()\n", mtime=30)
    write(work, "src/util.py", "def helper():\n    return 'OS'\n", mtime=20)
    write(work, "README.md", "Uses os and sys.\nNothing else.\n", mtime=10)
    write(work, "data.bin", "os\0binary\n", mtime=40)
    return work


async def test_grep_files_with_matches_is_the_default_newest_first(
    engine: str, code_tree: Path
) -> None:
    assert lines(await call(engine, code_tree, "grep", pattern=r"\bos\b")) == [
        "src/app.py",
        "README.md",
    ]


async def test_grep_case_insensitive(engine: str, code_tree: Path) -> None:
    found = await call(engine, code_tree, "grep", pattern=r"\bos\b", case_insensitive=True)
    assert lines(found) == ["src/app.py", "src/util.py", "README.md"]


async def test_grep_count_mode(engine: str, code_tree: Path) -> None:
    counted = await call(engine, code_tree, "grep", pattern="os", output_mode="count")
    assert lines(counted) == ["src/app.py: 2", "README.md: 1"]


async def test_grep_content_mode_numbers_lines(engine: str, code_tree: Path) -> None:
    shown = await call(engine, code_tree, "grep", pattern="os", output_mode="content")
    assert shown.text == (
        "src/app.py\n1: import os\n4:     return os.getcwd()\n\nREADME.md\n1: Uses os and sys."
    )


async def test_grep_content_mode_with_context(engine: str, work: Path) -> None:
    write(
        work,
        "f.txt",
        "one\ntwo\nHIT three\nfour\nfive\nsix\nseven\nHIT eight\nnine\nHIT ten\neleven\n",
    )
    shown = await call(engine, work, "grep", pattern="HIT", output_mode="content", context=1)
    assert lines(shown) == [
        "f.txt",
        "2- two",
        "3: HIT three",
        "4- four",
        "7- seven",
        "8: HIT eight",
        "9- nine",
        "10: HIT ten",
        "11- eleven",
    ]
    ignored = await call(engine, work, "grep", pattern="HIT", context=2)
    assert lines(ignored) == ["f.txt"]


async def test_grep_include_filters_file_names(engine: str, code_tree: Path) -> None:
    only_md = await call(engine, code_tree, "grep", pattern="os", include="*.md")
    assert lines(only_md) == ["README.md"]
    braces = await call(
        engine, code_tree, "grep", pattern="os", include="*.{md,txt}", output_mode="count"
    )
    assert lines(braces) == ["README.md: 1"]
    rooted = await call(engine, code_tree, "grep", pattern="(?i)os", include="src/*.py")
    assert lines(rooted) == ["src/app.py", "src/util.py"]


async def test_grep_include_does_not_override_gitignore(engine: str, work: Path) -> None:
    (work / ".gitignore").write_text("*.log\nbuild/\n")
    write(work, "a.log", "needle\n")
    write(work, "build/b.log", "needle\n")
    write(work, "c.txt", "needle\n")
    assert (await call(engine, work, "grep", pattern="needle", include="*.log")).text == (
        "No matches found"
    )
    assert lines(await call(engine, work, "grep", pattern="needle", include="*")) == ["c.txt"]


async def test_grep_honours_gitignore_hidden_and_git(engine: str, work: Path) -> None:
    (work / ".gitignore").write_text("ignored/\n")
    write(work, "ignored/a.txt", "needle\n")
    write(work, ".hidden/b.txt", "needle\n", mtime=2)
    write(work, ".git/HEAD", "needle\n")
    write(work, "c.txt", "needle\n", mtime=1)
    assert lines(await call(engine, work, "grep", pattern="needle")) == [".hidden/b.txt", "c.txt"]


async def test_grep_a_single_file(engine: str, code_tree: Path) -> None:
    target = code_tree / "src" / "app.py"
    found = await call(engine, code_tree, "grep", pattern="os", path="src/app.py")
    assert lines(found) == [str(target)]
    content = await call(
        engine, code_tree, "grep", pattern="getcwd", path="src/app.py", output_mode="content"
    )
    assert lines(content) == [str(target), "4:     return os.getcwd()"]
    binary = await call(engine, code_tree, "grep", pattern="os", path="data.bin")
    assert binary.text == "No matches found"


async def test_grep_skips_binary_files_even_with_a_late_nul(engine: str, work: Path) -> None:
    write(work, "text.txt", "needle\n", mtime=1)
    (work / "late.bin").write_bytes(b"needle\n" + b"filler line\n" * 20_000 + b"\0tail\n")
    (work / "early.bin").write_bytes(b"\0needle\n")
    for mode in ("files_with_matches", "count", "content"):
        result = await call(engine, work, "grep", pattern="needle", output_mode=mode)
        assert lines(result)[0].startswith("text.txt"), mode
        assert "bin" not in result.text


async def test_grep_head_limit_caps_entries(engine: str, work: Path) -> None:
    for index in range(5):
        write(work, f"f{index}.txt", "needle\nneedle\n", mtime=100 + index)
    listed = await call(engine, work, "grep", pattern="needle", head_limit=2)
    assert lines(listed) == [
        "f4.txt",
        "f3.txt",
        "(Showing 2 of 5 files; 3 more not shown. Narrow the pattern, the path or include, "
        "or raise head_limit.)",
    ]
    content = await call(
        engine, work, "grep", pattern="needle", output_mode="content", head_limit=3
    )
    assert content.text == (
        "f4.txt\n1: needle\n2: needle\n\nf3.txt\n1: needle\n\n(Showing 3 of 10 lines; 7 more "
        "not shown. Narrow the pattern, the path or include, or raise head_limit.)"
    )


async def test_grep_cuts_long_lines_on_a_character_boundary(engine: str, work: Path) -> None:
    write(work, "long.txt", "needle " + "é" * 2000 + "\n")
    shown = await call(engine, work, "grep", pattern="needle", output_mode="content")
    line = lines(shown)[1]
    assert line.startswith("1: needle ")
    assert line.endswith(f"... (line truncated to {GREP_MAX_LINE_BYTES} bytes)")
    kept = line.removeprefix("1: ").removesuffix(
        f" ... (line truncated to {GREP_MAX_LINE_BYTES} bytes)"
    )
    assert len(kept.encode()) <= GREP_MAX_LINE_BYTES
    assert kept == "needle " + "é" * ((GREP_MAX_LINE_BYTES - 7) // 2)


async def test_grep_crlf_and_invalid_utf8_lines(engine: str, work: Path) -> None:
    (work / "crlf.txt").write_bytes(b"alpha\r\nbeta end\r\n")
    (work / "latin.txt").write_bytes(b"caf\xe9 alpha\n")
    os.utime(work / "latin.txt", ns=(1, 1))
    shown = await call(engine, work, "grep", pattern="alpha|end$", output_mode="content")
    assert lines(shown) == ["crlf.txt", "1: alpha", "", "latin.txt", "1: caf\ufffd alpha"]


async def test_grep_pattern_may_start_with_a_dash(engine: str, work: Path) -> None:
    write(work, "a.txt", "x --flag y\n")
    assert lines(await call(engine, work, "grep", pattern="--flag")) == ["a.txt"]


async def test_grep_no_matches(engine: str, code_tree: Path) -> None:
    result = await call(engine, code_tree, "grep", pattern="absent-everywhere")
    assert result.text == "No matches found"
    assert not result.is_error


async def test_grep_invalid_regex_is_a_pattern_error(engine: str, code_tree: Path) -> None:
    for pattern in ("a(", "[z-a]", r"a\nb"):
        result = await call(engine, code_tree, "grep", pattern=pattern)
        assert code(result) == "SEARCH_INVALID_PATTERN", (pattern, result.text)
    bad_include = await call(engine, code_tree, "grep", pattern="os", include="[z-a]")
    assert code(bad_include) == "SEARCH_INVALID_PATTERN"


async def test_grep_missing_path_names_it(engine: str, code_tree: Path) -> None:
    result = await call(engine, code_tree, "grep", pattern="os", path="src/missing.py")
    assert code(result) == "FS_NOT_FOUND"
    assert str(code_tree / "src" / "missing.py") in result.text


async def test_grep_rejects_out_of_range_arguments(engine: str, code_tree: Path) -> None:
    for arguments in ({"context": 11}, {"head_limit": 0}, {"output_mode": "lines"}):
        result = await call(engine, code_tree, "grep", pattern="os", **arguments)
        assert code(result) == "INVALID_ARGS", arguments


# -- the sandbox -----------------------------------------------------------------------------


async def test_denied_paths_under_the_root_are_dropped(engine: str, work: Path) -> None:
    write(work, "open.txt", "needle\n", mtime=2)
    write(work, "secret/key.txt", "needle\n", mtime=3)
    write(work, "deny-me.txt", "needle\n", mtime=4)
    policy = SandboxPolicy(workspace=work, denied_paths=(work / "secret", work / "deny-me.txt"))
    globbed = await call(engine, work, "glob", sandbox=policy, pattern="*.txt")
    assert lines(globbed) == ["open.txt"]
    for mode in ("files_with_matches", "count", "content"):
        grepped = await call(
            engine, work, "grep", sandbox=policy, pattern="needle", output_mode=mode
        )
        assert "secret" not in grepped.text, mode
        assert "deny-me" not in grepped.text, mode
        assert lines(grepped)[0].startswith("open.txt"), mode


async def test_a_denied_root_is_refused(engine: str, work: Path) -> None:
    write(work, "secret/key.txt", "needle\n")
    policy = SandboxPolicy(workspace=work, denied_paths=(work / "secret",))
    result = await call(engine, work, "grep", sandbox=policy, pattern="needle", path="secret")
    assert code(result) == "FS_SANDBOX_DENIED"
    globbed = await call(engine, work, "glob", sandbox=policy, pattern="*", path="secret/")
    assert code(globbed) == "FS_SANDBOX_DENIED"


# -- the engines agree -----------------------------------------------------------------------


def mixed_tree(root: Path, outside: Path) -> None:
    (root / ".gitignore").write_text("*.o\nbuild/\n!important.o\ndocs/*.tmp\n")
    files = {
        "README.md": "# Title\nTODO: write docs\n",
        "main.c": "int main(void) {\n  // TODO fix\n  return 0;\n}\n",
        "main.o": "TODO object\n",
        "important.o": "TODO kept\n",
        "build/gen.c": "TODO generated\n",
        "docs/a.tmp": "TODO tmp\n",
        "docs/guide.md": "Intro\nTODO: more\nOutro\n",
        "docs/deep/b.tmp": "TODO deeper tmp\n",
        "src/lib/.gitignore": "*.gen.py\n!keep.gen.py\n",
        "src/lib/x.gen.py": "TODO gen\n",
        "src/lib/keep.gen.py": "todo keep\n",
        "src/lib/mod.py": "def f():\n    pass  # TODO\n\n\n# todo lower\n",
        ".github/workflows/ci.yml": "steps: # TODO\n",
        ".git/config": "TODO git\n",
        "space name/file one.txt": "TODO spaced\n",
        "unicodé/ünï.txt": "TODO ünïcode\n",
    }
    for index, (rel, text) in enumerate(sorted(files.items())):
        write(root, rel, text, mtime=1_000 + index * 7 % 11)
    (root / "blob.bin").write_bytes(b"TODO\0\x01\x02")
    (root / os.fsdecode(b"bad-\xff-name.txt")).write_bytes(b"TODO in an undecodable name\n")
    write(outside, "far.txt", "TODO far\n")
    (root / "far").symlink_to(outside, target_is_directory=True)


async def test_both_engines_give_identical_output_on_a_mixed_tree(
    work: Path, tmp_path: Path
) -> None:
    assert shutil.which("rg"), RG_MISSING
    mixed_tree(work, tmp_path / "outside")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("glob", {"pattern": "*"}),
        ("glob", {"pattern": "**/*.md"}),
        ("glob", {"pattern": "*.{c,o,py}"}),
        ("glob", {"pattern": "docs/**"}),
        ("glob", {"pattern": "*", "path": "src"}),
        ("grep", {"pattern": "TODO"}),
        ("grep", {"pattern": "todo", "case_insensitive": True, "output_mode": "count"}),
        ("grep", {"pattern": "TODO", "output_mode": "content", "context": 2}),
        ("grep", {"pattern": r"TODO:?\s+\w+", "output_mode": "content", "include": "*.md"}),
        ("grep", {"pattern": "TODO", "path": "docs", "output_mode": "count"}),
        ("grep", {"pattern": "ünï", "output_mode": "content"}),
        ("grep", {"pattern": "TODO", "path": "main.c", "output_mode": "content"}),
        ("grep", {"pattern": "TODO", "head_limit": 3}),
        ("grep", {"pattern": "undecodable", "output_mode": "content"}),
    ]
    for name, arguments in calls:
        python = await call("python", work, name, **arguments)
        ripgrep = await call("rg", work, name, **arguments)
        assert not python.is_error, (name, arguments, python.text)
        assert python.text == ripgrep.text, (name, arguments)
        assert python.meta == {**ripgrep.meta, "engine": "python"}  # type: ignore[dict-item]
    named = await call("rg", work, "grep", pattern="undecodable")
    assert named.text == "bad-\ufffd-name.txt"


# -- ripgrep as a process --------------------------------------------------------------------


def fake_rg(directory: Path, script: str) -> str:
    path = directory / "fake-rg"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


async def test_cancelling_a_search_kills_ripgrep(work: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "rg.pid"
    executable = fake_rg(tmp_path, f'echo $$ > "{pid_file}"\nexec sleep 30\n')
    tool = GrepTool(FsSettings(ripgrep=executable))
    execution = ToolExecution(
        call_id="c1", tool_name="grep", arguments={"pattern": "x"}, caller=Caller.at(work)
    )
    task = asyncio.create_task(tool.execute(tool.parameters(pattern="x"), execution))
    for _ in range(500):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    pid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_ripgrep_output_over_the_bound_is_an_overflow_error(
    work: Path, tmp_path: Path
) -> None:
    executable = fake_rg(tmp_path, "head -c 21000000 /dev/zero\n")
    registry = ToolRegistry()
    registry.register(GrepTool(FsSettings(ripgrep=executable)))
    result = await registry.execute(
        ToolCall("c1", "grep", json.dumps({"pattern": "x"})), caller=Caller.at(work)
    )
    assert code(result) == "SEARCH_RAW_OUTPUT_OVERFLOW"
    assert "narrow" in result.text


async def test_an_absent_ripgrep_falls_back_to_python(work: Path) -> None:
    write(work, "a.txt", "needle\n")
    registry = ToolRegistry()
    registry.register(GrepTool(FsSettings(ripgrep="no-such-rg-executable")))
    result = await registry.execute(
        ToolCall("c1", "grep", json.dumps({"pattern": "needle"})), caller=Caller.at(work)
    )
    assert result.text == "a.txt"
    assert isinstance(result.meta, dict)
    assert result.meta["engine"] == "python"


# -- the definitions -------------------------------------------------------------------------


def test_both_tools_are_concurrency_safe_and_gain_escalation_under_a_sandbox() -> None:
    plain = FsSettings(ripgrep=None)
    boxed = FsSettings(sandbox=SandboxPolicy(workspace=Path("/w")), ripgrep=None)
    for tool_class in (GlobTool, GrepTool):
        tool = tool_class(plain)
        assert tool.is_concurrency_safe(tool.parameters(pattern="x")) is True
        plain_schema = tool.parameters.model_json_schema()
        assert "sandbox_permissions" not in plain_schema["properties"]
        assert plain_schema["required"] == ["pattern"]
        boxed_schema = tool_class(boxed).parameters.model_json_schema()
        assert "sandbox_permissions" in boxed_schema["properties"]
