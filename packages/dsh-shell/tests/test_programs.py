"""find_program and program_inside: a trusted program is found once, never in a writable root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_shell import ShellValueError, find_program, program_inside


def _program(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho fake\n")
    path.chmod(0o755)
    return path


def test_a_name_is_found_in_the_first_absolute_path_entry(tmp_path: Path) -> None:
    first = _program(tmp_path / "a" / "tool")
    _program(tmp_path / "b" / "tool")
    path = f"{tmp_path / 'a'}:{tmp_path / 'b'}"
    assert find_program("tool", {"PATH": path}) == str(first)


def test_relative_and_empty_path_entries_are_never_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _program(tmp_path / "tool")
    _program(tmp_path / "bin" / "tool")
    real = _program(tmp_path / "system" / "tool")
    for search in ("", ":", ".", "bin", "./bin", f"::.:bin:{tmp_path / 'system'}"):
        found = find_program("tool", {"PATH": search})
        assert found == (str(real) if "system" in search else None), search


def test_a_non_executable_or_a_folder_is_not_a_program(tmp_path: Path) -> None:
    (tmp_path / "tool").write_text("not executable")
    (tmp_path / "dir" / "tool").mkdir(parents=True)
    search = f"{tmp_path}:{tmp_path / 'dir'}"
    assert find_program("tool", {"PATH": search}) is None


def test_a_path_is_made_absolute_and_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    tool = _program(tmp_path / "bin" / "tool")
    assert find_program("bin/tool", {"PATH": ""}) == str(tool)
    assert find_program(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("bad", ["", "a\0b", 3])
def test_a_bad_name_is_refused(bad: object) -> None:
    with pytest.raises(ShellValueError) as caught:
        find_program(bad)  # type: ignore[arg-type]
    assert caught.value.name == "program"


def test_program_inside_names_the_root_as_named_or_through_symlinks(tmp_path: Path) -> None:
    workspace = tmp_path / "w"
    planted = _program(workspace / ".venv" / "bin" / "bwrap")
    assert program_inside(str(planted), [tmp_path / "other", workspace]) == workspace
    link_dir = tmp_path / "links"
    link_dir.mkdir()
    os.symlink(planted, link_dir / "bwrap")  # a link outside pointing into the root
    assert program_inside(str(link_dir / "bwrap"), [workspace]) == workspace
    os.symlink(workspace, tmp_path / "alias")  # a root named through a symlink
    assert program_inside(str(planted), [tmp_path / "alias"]) == tmp_path / "alias"
    assert program_inside("/usr/bin/env", [workspace]) is None
