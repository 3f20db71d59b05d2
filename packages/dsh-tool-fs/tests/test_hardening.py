"""The review's cases: symlinked rules, FIFOs, streamed windows, safe opens for the search,
a failed read that is no read, creation that never replaces, long names, trailing slashes,
owners kept."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import dsh_tool_fs._read as read_module
from dsh_shell import SandboxPolicy
from dsh_tool_fs import FileTools, write_atomic
from dsh_tool_fs._engine import _open_checked
from support import Caller, Tools, code

SAFETY = 60.0
"""Seconds a call may take before the test calls it hung: a safety net, not a speed bar."""


def tools(work: Path, policy: SandboxPolicy | None = None, rg: str | None = None) -> Tools:
    return Tools(FileTools(policy, ripgrep=rg), Caller.at(work))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    (tmp_path / "dotfiles" / "ssh").mkdir(parents=True)
    (tmp_path / "dotfiles" / "ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / ".ssh").symlink_to(tmp_path / "dotfiles" / "ssh")
    return tmp_path


@pytest.mark.parametrize("rg", [None, "rg"])
async def test_a_denied_path_that_is_a_symlink_covers_where_it_leads(
    tree: Path, rg: str | None
) -> None:
    policy = SandboxPolicy(mode="workspace-write", denied_paths=(tree / "user" / ".ssh",))
    t = tools(tree / "work", policy, rg)
    secret = str(tree / "user" / ".ssh" / "id_ed25519")
    assert code(await t.call("read", file_path=secret)) == "FS_SANDBOX_DENIED"
    grep = await t.call("grep", pattern="PRIVATE", path=str(tree / "user" / ".ssh"))
    assert code(grep) == "FS_SANDBOX_DENIED"
    glob = await t.call("glob", pattern="*", path=str(tree / "user" / ".ssh"))
    assert code(glob) == "FS_SANDBOX_DENIED"
    for result in (grep, glob):
        assert "PRIVATE KEY" not in result.text


async def test_a_read_only_path_that_is_a_symlink_stays_read_only(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "state").mkdir(parents=True)
    (work / "state" / "config.toml").write_text("safe = true\n")
    (tmp_path / ".dsh").symlink_to(work / "state")
    policy = SandboxPolicy(mode="workspace-write", read_only_paths=(tmp_path / ".dsh",))
    t = tools(work, policy)
    target = str(tmp_path / ".dsh" / "config.toml")
    await t.call("read", file_path=target)
    edit = await t.call("edit", file_path=target, old_string="true", new_string="false")
    assert code(edit) == "FS_SANDBOX_DENIED"
    assert (work / "state" / "config.toml").read_text() == "safe = true\n"


async def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    t = tools(tmp_path)
    for name, args in [
        ("read", {}),
        ("write", {"content": "x"}),
        ("edit", {"old_string": "a", "new_string": "b"}),
    ]:
        result = await asyncio.wait_for(t.call(name, file_path="pipe", **args), SAFETY)
        assert code(result) == "FS_NOT_A_FILE", (name, result.text)


async def test_a_streamed_read_keeps_only_its_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(read_module, "WHOLE_FILE_BYTES", 16)  # every file here is streamed
    wide = "w" * (3 * read_module._STREAM_LINE_CAP)
    (tmp_path / "big.txt").write_text(
        "".join(f"line {n}\n" for n in range(1, 50)) + wide + "\nend\n"
    )
    t = tools(tmp_path)
    page = await t.call("read", file_path="big.txt", offset=10, limit=2)
    assert "10: line 10\n11: line 11\n\n" in page.text
    assert "(Showing lines 10-11 of 51. Continue with offset=12.)" in page.text
    tail = await t.call("read", file_path="big.txt", offset=50)
    assert f"50: {'w' * 2000}... (line truncated to 2000 characters)" in tail.text
    assert "51: end" in tail.text
    assert "(End of file: 51 lines in total.)" in tail.text


def test_the_search_opens_only_the_regular_file_it_checked(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "f.txt").write_text("x")
    (tmp_path / "via").symlink_to(tmp_path / "dir")
    assert _open_checked(str(tmp_path / "link.txt"), None) is None
    assert _open_checked(str(tmp_path / "pipe"), None) is None
    assert _open_checked(str(tmp_path / "via" / "f.txt"), None) is None
    denied = SandboxPolicy(mode="workspace-write", denied_paths=(tmp_path / "real.txt",))
    assert _open_checked(str(tmp_path / "real.txt"), denied) is None
    stream = _open_checked(str(tmp_path / "real.txt"), None)
    assert stream is not None
    with stream:
        assert stream.read() == b"x"


async def test_a_read_that_failed_does_not_count_as_read(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\n")
    t = tools(tmp_path)
    assert code(await t.call("read", file_path="f.txt", offset=99)) == "FS_BAD_OFFSET"
    edit = await t.call("edit", file_path="f.txt", old_string="one", new_string="two")
    assert code(edit) == "FS_NOT_READ"
    assert (tmp_path / "f.txt").read_text() == "one\n"


def test_creating_never_replaces_a_file_that_appeared_meanwhile(tmp_path: Path) -> None:
    target = tmp_path / "new.txt"
    target.write_text("written by someone else\n")
    with pytest.raises(FileExistsError):
        write_atomic(target, b"model\n", None)  # the caller saw no file there
    assert target.read_text() == "written by someone else\n"
    assert os.listdir(tmp_path) == ["new.txt"]


async def test_a_name_near_the_limit_can_be_written_and_edited(tmp_path: Path) -> None:
    name = "n" * 250 + ".txt"
    t = tools(tmp_path)
    assert not (await t.call("write", file_path=name, content="a\n")).is_error
    assert not (await t.call("edit", file_path=name, old_string="a", new_string="b")).is_error
    assert (tmp_path / name).read_text() == "b\n"


async def test_a_trailing_slash_names_a_directory_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x\n")
    t = tools(tmp_path)
    assert code(await t.call("write", file_path="newname/", content="x")) == "FS_NOT_A_FILE"
    assert not (tmp_path / "newname").exists()
    assert code(await t.call("read", file_path="f.txt/")) == "FS_NOT_A_FILE"


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
async def test_an_edit_keeps_the_files_owner(tmp_path: Path) -> None:
    target = tmp_path / "owned.txt"
    target.write_text("a\n")
    os.chown(target, 1234, 1234)
    t = tools(tmp_path)
    await t.call("read", file_path="owned.txt")
    assert not (
        await t.call("edit", file_path="owned.txt", old_string="a", new_string="b")
    ).is_error
    status = os.stat(target)
    assert (status.st_uid, status.st_gid) == (1234, 1234)
