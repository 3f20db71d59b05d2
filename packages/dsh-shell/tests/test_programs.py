"""find_program and program_inside: a trusted program is found once, never in a writable root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_shell import (
    SYSTEM_PROGRAM_DIRS,
    ShellNotFoundError,
    ShellValueError,
    find_program,
    program_inside,
)


def _program(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho fake\n")
    path.chmod(0o755)
    return path


def _private(*folders: Path) -> None:
    for folder in folders:
        for path in (folder, *folder.rglob("*")):
            if path.is_dir():
                path.chmod(0o755)


def test_the_system_program_folders_are_fixed_and_absolute() -> None:
    assert SYSTEM_PROGRAM_DIRS[:2] == ("/usr/bin", "/bin")
    assert all(os.path.isabs(entry) for entry in SYSTEM_PROGRAM_DIRS)


def test_a_name_is_found_in_the_system_folders_never_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_bin = tmp_path / "home" / "bin"  # a ~/bin an earlier run in ~ could have filled
    _program(user_bin / "bash")
    monkeypatch.setenv("PATH", f"{user_bin}:{os.environ.get('PATH', os.defpath)}")
    found = find_program("bash")
    assert found is not None
    assert os.path.dirname(found) in SYSTEM_PROGRAM_DIRS
    assert find_program("no-such-program-anywhere") is None


def test_a_name_is_found_in_the_first_folder_that_has_it(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    first = _program(a / "tool")
    _program(b / "tool")
    _private(tmp_path)
    assert find_program("tool", dirs=(str(tmp_path / "none"), str(a), str(b))) == str(first)
    assert find_program("tool", dirs=("a", str(b))) == str(b / "tool")  # relative: skipped


def test_a_program_others_may_replace_is_refused_naming_why(tmp_path: Path) -> None:
    loose_dir = tmp_path / "local-bin"
    _program(loose_dir / "bwrap")
    loose_dir.chmod(0o777)  # a misconfigured /usr/local/bin
    with pytest.raises(ShellNotFoundError) as caught:
        find_program("bwrap", dirs=(str(loose_dir),))
    assert str(loose_dir) in caught.value.reason
    assert "group or others" in caught.value.reason
    tight_dir = tmp_path / "bin"
    tool = _program(tight_dir / "bwrap")
    tool.chmod(0o775)  # the file itself group-writable
    with pytest.raises(ShellNotFoundError) as caught:
        find_program("bwrap", dirs=(str(tight_dir),))
    assert str(tool) in caught.value.reason
    tool.chmod(0o755)
    assert find_program("bwrap", dirs=(str(tight_dir),)) == str(tool)


def test_a_non_executable_or_a_folder_is_not_a_program(tmp_path: Path) -> None:
    (tmp_path / "tool").write_text("not executable")
    (tmp_path / "dir" / "tool").mkdir(parents=True)
    assert find_program("tool", dirs=(str(tmp_path), str(tmp_path / "dir"))) is None


def test_a_path_is_used_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    tool = _program(tmp_path / "bin" / "tool")
    (tmp_path / "bin").chmod(0o777)  # a configured path is the operator's choice
    assert find_program("bin/tool") == str(tool)
    assert find_program(str(tool)) == str(tool)
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
