"""read, write and edit with real files: output, paging, caps, images, refusals, atomicity."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from dsh_llm import ImageBlock
from dsh_tool_fs import READ_MAX_BYTES, FileTools, Observations
from support import Caller, Tools, code

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def overwrite_in_place(target: Path, data: bytes) -> None:
    """Change the content keeping the inode, the size and the modification time."""
    before = os.stat(target)
    with open(target, "r+b") as file:
        file.write(data)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


def tools(work: Path, **options: object) -> Tools:
    return Tools(FileTools(ripgrep=None, **options), Caller.at(work))  # type: ignore[arg-type]


async def test_read_numbers_lines_and_says_where_the_file_ends(work: Path) -> None:
    (work / "a.txt").write_text("alpha\nbeta\ngamma\n")
    result = await tools(work).call("read", file_path="a.txt")
    assert not result.is_error, result.text
    path = work / "a.txt"
    assert result.text == (
        f"<path>{path}</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n3: gamma\n\n"
        "(End of file: 3 lines in total.)\n</content>"
    )


async def test_read_pages_with_offset_and_limit(work: Path) -> None:
    (work / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    t = tools(work)
    page = await t.call("read", file_path="n.txt", offset=4, limit=3)
    assert "4: line 4\n5: line 5\n6: line 6\n\n" in page.text
    assert "(Showing lines 4-6 of 10. Continue with offset=7.)" in page.text
    past = await t.call("read", file_path="n.txt", offset=11)
    assert code(past) == "FS_BAD_OFFSET"
    assert "past the end" in past.text
    assert "(10 lines)" in past.text
    bad = await t.call("read", file_path="n.txt", limit=0)
    assert code(bad) == "INVALID_ARGS"


async def test_read_caps_the_bytes_and_says_where_to_continue(work: Path) -> None:
    line = "x" * 999
    (work / "big.txt").write_text((line + "\n") * 200)
    result = await tools(work).call("read", file_path="big.txt")
    assert len(result.text.encode()) < READ_MAX_BYTES + 1000
    shown = result.text.count("\n" + "x" * 10) + (1 if "1: x" in result.text else 0)
    last = max(int(entry.split(":")[0]) for entry in result.text.split("\n") if entry[:1].isdigit())
    assert last < 200
    assert f"Continue with offset={last + 1}." in result.text
    assert "Output capped at 50 KiB" in result.text
    assert shown >= 1


async def test_a_long_line_is_cut_with_a_marker(work: Path) -> None:
    (work / "wide.txt").write_text("y" * 5000 + "\n")
    result = await tools(work).call("read", file_path="wide.txt")
    assert "1: " + "y" * 2000 + "... (line truncated to 2000 characters)" in result.text


async def test_read_of_an_image_gives_an_image_block(work: Path) -> None:
    (work / "dot.png").write_bytes(PNG)
    result = await tools(work).call("read", file_path="dot.png")
    assert not result.is_error
    images = [b for b in result.content if isinstance(b, ImageBlock)]
    assert len(images) == 1
    assert images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data or "") == PNG


async def test_read_refuses_a_binary_file_a_directory_and_a_missing_one(work: Path) -> None:
    (work / "blob.bin").write_bytes(b"\x00\x01\x02garbage")
    (work / "dir").mkdir()
    t = tools(work)
    assert code(await t.call("read", file_path="blob.bin")) == "FS_NOT_TEXT"
    assert code(await t.call("read", file_path="dir")) == "FS_NOT_A_FILE"
    missing = await t.call("read", file_path="nope.txt")
    assert code(missing) == "FS_NOT_FOUND"
    assert str(work / "nope.txt") in missing.text


async def test_read_shows_invalid_utf8_with_replacement_characters(work: Path) -> None:
    (work / "latin.txt").write_bytes(b"caf\xe9\n")
    result = await tools(work).call("read", file_path="latin.txt")
    assert "1: caf\ufffd" in result.text
    assert "not valid UTF-8" in result.text


async def test_write_creates_a_file_and_its_parents(work: Path) -> None:
    result = await tools(work).call("write", file_path="new/deep/f.txt", content="hello\n")
    assert not result.is_error, result.text
    assert (work / "new/deep/f.txt").read_text() == "hello\n"
    assert result.text == f"Created {work / 'new/deep/f.txt'} (6 bytes)."


async def test_overwriting_needs_a_read_first_and_a_current_one(work: Path) -> None:
    target = work / "f.txt"
    target.write_text("one\n")
    t = tools(work)
    refused = await t.call("write", file_path="f.txt", content="two\n")
    assert code(refused) == "FS_NOT_READ"
    assert str(target) in refused.text
    assert target.read_text() == "one\n"
    await t.call("read", file_path="f.txt")
    target.write_text("changed elsewhere\n")
    stale = await t.call("write", file_path="f.txt", content="two\n")
    assert code(stale) == "FS_CHANGED"
    assert target.read_text() == "changed elsewhere\n"
    await t.call("read", file_path="f.txt")
    assert not (await t.call("write", file_path="f.txt", content="two\n")).is_error
    assert target.read_text() == "two\n"
    # what the session wrote itself counts as read
    assert not (await t.call("write", file_path="f.txt", content="three\n")).is_error


async def test_a_same_size_same_mtime_change_is_caught_by_the_digest(work: Path) -> None:
    target = work / "f.txt"
    target.write_text("aaaa\n")
    t = tools(work)
    await t.call("read", file_path="f.txt")
    overwrite_in_place(target, b"bbbb")
    stale = await t.call("edit", file_path="f.txt", old_string="bbbb", new_string="cccc")
    assert code(stale) == "FS_CHANGED"


async def test_edit_replaces_a_unique_match_and_counts_the_others(work: Path) -> None:
    target = work / "code.py"
    target.write_text("x = 1\ny = 1\nz = 2\n")
    t = tools(work)
    assert code(await t.call("edit", file_path="code.py", old_string="z", new_string="w")) == (
        "FS_NOT_READ"
    )
    await t.call("read", file_path="code.py")
    many = await t.call("edit", file_path="code.py", old_string="= 1", new_string="= 3")
    assert code(many) == "FS_MULTIPLE_MATCHES"
    assert "occurs 2 times" in many.text
    none = await t.call("edit", file_path="code.py", old_string="q = 9", new_string="q = 8")
    assert code(none) == "FS_NO_MATCH"
    one = await t.call("edit", file_path="code.py", old_string="z = 2", new_string="z = 5")
    assert one.text == f"Edited {target}: replaced 1 occurrence."
    every = await t.call(
        "edit", file_path="code.py", old_string="= 1", new_string="= 3", replace_all=True
    )
    assert every.text == f"Edited {target}: replaced 2 occurrences."
    assert target.read_text() == "x = 3\ny = 3\nz = 5\n"
    same = await t.call("edit", file_path="code.py", old_string="x", new_string="x")
    assert code(same) == "INVALID_ARGS"
    empty = await t.call("edit", file_path="code.py", old_string="", new_string="x")
    assert code(empty) == "INVALID_ARGS"


async def test_edit_refuses_binary_and_non_utf8_files_and_leaves_them_alone(work: Path) -> None:
    (work / "latin.txt").write_bytes(b"caf\xe9 au lait\n")
    (work / "blob.bin").write_bytes(b"ab\x00cd")
    t = tools(work)
    await t.call("read", file_path="latin.txt")
    latin = await t.call("edit", file_path="latin.txt", old_string="au", new_string="sans")
    assert code(latin) == "FS_NOT_TEXT"
    assert "not valid UTF-8" in latin.text
    assert (work / "latin.txt").read_bytes() == b"caf\xe9 au lait\n"
    await t.call("read", file_path="blob.bin")  # refused as binary: never observed
    blob = await t.call("edit", file_path="blob.bin", old_string="ab", new_string="xy")
    assert code(blob) in ("FS_NOT_READ", "FS_NOT_TEXT")
    assert (work / "blob.bin").read_bytes() == b"ab\x00cd"


async def test_writes_keep_the_mode_and_replace_the_file_atomically(work: Path) -> None:
    script = work / "run.sh"
    script.write_text("echo one\n")
    script.chmod(0o750)
    t = tools(work)
    await t.call("read", file_path="run.sh")
    inode = os.stat(script).st_ino
    assert not (
        await t.call("edit", file_path="run.sh", old_string="one", new_string="two")
    ).is_error
    status = os.stat(script)
    assert stat.S_IMODE(status.st_mode) == 0o750
    assert status.st_ino != inode  # a new file renamed over the old one, never rewritten in place
    assert os.listdir(work) == ["run.sh"]  # no temporary file left


async def test_a_symlink_inside_the_workspace_is_edited_at_its_target(work: Path) -> None:
    (work / "real.txt").write_text("v1\n")
    (work / "link.txt").symlink_to("real.txt")
    t = tools(work)
    await t.call("read", file_path="link.txt")
    assert not (
        await t.call("edit", file_path="link.txt", old_string="v1", new_string="v2")
    ).is_error
    assert (work / "link.txt").is_symlink()
    assert (work / "real.txt").read_text() == "v2\n"


async def test_read_state_is_per_session_and_rebuilt_from_the_log(work: Path) -> None:
    (work / "f.txt").write_text("one\n")
    observations = Observations()
    first = Tools(FileTools(ripgrep=None, observations=observations), Caller.at(work, "s1"))
    await first.call("read", file_path="f.txt")
    other = Tools(FileTools(ripgrep=None, observations=observations), Caller.at(work, "s2"))
    assert code(await other.call("edit", file_path="f.txt", old_string="one", new_string="x")) == (
        "FS_NOT_READ"
    )
    # a new process: fresh state, the same session's log
    resumed = Tools(FileTools(ripgrep=None), first.caller)
    done = await resumed.call("edit", file_path="f.txt", old_string="one", new_string="two")
    assert not done.is_error, done.text
    assert (work / "f.txt").read_text() == "two\n"


async def test_a_lone_surrogate_in_content_is_an_argument_error(work: Path) -> None:
    t = tools(work)
    result = await t.registry.execute(
        __import__("dsh_tools").ToolCall(
            "c9", "write", '{"file_path": "s.txt", "content": "\\ud800"}'
        ),
        t.caller,
    )
    assert code(result) == "INVALID_ARGS"
    assert not (work / "s.txt").exists()
