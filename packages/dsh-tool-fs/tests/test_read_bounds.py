"""A ``read`` of a few lines of a huge file reads only up to its window, and a cancelled
``read`` stops reading: sparse files of many GiB, so the tests cost no disk."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from dsh_tool_fs import FileTools
from support import Caller, Tools, code

SAFETY = 60.0
"""Seconds a call may take before the test calls it hung: a safety net, not a speed bar. A
read that scans the whole of these files takes far longer."""

HEAD = "".join(f"line {number:05}\n" for number in range(1, 2001))  # 22 KB of text first


def huge(path: Path, size: int) -> Path:
    """``HEAD`` followed by zero bytes (a hole: nothing on disk) up to ``size`` bytes."""
    path.write_text(HEAD)
    os.truncate(path, size)
    return path


def open_positions(path: Path) -> list[int]:
    """The file offsets of this process's descriptors open on ``path``."""
    positions = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != str(path):
                continue
            with open(f"/proc/self/fdinfo/{fd}") as info:
                first = info.readline()  # "pos:\t<offset>"
        except OSError:
            continue
        positions.append(int(first.split()[1]))
    return positions


async def until(condition: object, what: str) -> None:
    """Wait (bounded by `SAFETY`) until ``condition()`` holds."""
    assert callable(condition)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SAFETY
    while not condition():
        assert loop.time() < deadline, f"gave up waiting until {what}"
        await asyncio.sleep(0.01)


async def test_a_few_lines_of_a_huge_file_stop_at_the_window(tmp_path: Path) -> None:
    big = huge(tmp_path / "big.log", 64 * 1024**3)
    t = Tools(FileTools(), Caller.at(tmp_path))
    page = await asyncio.wait_for(t.call("read", file_path="big.log", limit=5), SAFETY)
    assert not page.is_error, page.text
    assert "1: line 00001\n" in page.text
    assert "5: line 00005\n\n" in page.text
    assert "6: line" not in page.text
    assert "(Showing lines 1-5; more lines follow. Continue with offset=6.)" in page.text
    assert open_positions(big) == []  # nothing left reading


async def test_a_window_near_the_end_of_a_large_file_still_gives_the_total(
    tmp_path: Path,
) -> None:
    big = tmp_path / "big.txt"
    big.write_text("".join(f"row {number}\n" for number in range(1, 2_000_001)))  # 23 MB
    t = Tools(FileTools(), Caller.at(tmp_path))
    page = await asyncio.wait_for(t.call("read", file_path="big.txt", offset=1_999_999), SAFETY)
    assert "1999999: row 1999999\n2000000: row 2000000\n" in page.text
    assert "(End of file: 2000000 lines in total.)" in page.text
    head = await asyncio.wait_for(t.call("read", file_path="big.txt", limit=2), SAFETY)
    assert "(Showing lines 1-2; more lines follow. Continue with offset=3.)" in head.text


def spaced(path: Path, size: int, every: int, until: int) -> Path:
    """``HEAD``, then zeros (a hole) to ``size`` bytes with a newline every ``every`` bytes up
    to ``until``: lines long but each with an end, so reaching a far offset has to read them."""
    with path.open("wb") as file:
        file.write(HEAD.encode())
        for position in range(every, until, every):
            file.seek(position)
            file.write(b"\n")
    os.truncate(path, size)
    return path


async def test_a_cancelled_read_stops_reading(tmp_path: Path) -> None:
    # 4 TiB with a line end every 8 MiB for its first 64 GiB: reaching line 9000 reads 56 GiB
    big = spaced(tmp_path / "endless.log", 4 * 1024**4, 8 * 1024**2, 64 * 1024**3)
    t = Tools(FileTools(), Caller.at(tmp_path))
    task = asyncio.create_task(t.call("read", file_path="endless.log", offset=9000))
    await until(lambda: any(pos > 64 * 1024**2 for pos in open_positions(big)), "it reads")
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=SAFETY)
    assert task in done
    assert code(task.result()) == "ABORTED"  # the registry's result for a cancelled call
    await until(lambda: open_positions(big) == [], "the read stopped and closed the file")


def one_long_line(path: Path, size: int) -> Path:
    """A first line of 9,000 ``a`` and then zeros (a hole) to ``size`` bytes: no line end."""
    path.write_bytes(b"a" * 9000)
    os.truncate(path, size)
    return path


async def test_the_first_line_of_a_huge_file_without_a_line_end_is_cut_not_scanned(
    tmp_path: Path,
) -> None:
    big = one_long_line(tmp_path / "one.log", 64 * 1024**3)
    t = Tools(FileTools(), Caller.at(tmp_path))
    page = await asyncio.wait_for(t.call("read", file_path="one.log", limit=1), SAFETY)
    assert not page.is_error, page.text
    assert "1: " + "a" * 2000 + "... (line truncated to 2000 characters)\n" in page.text
    assert "(Showing lines 1-1; more lines follow. Continue with offset=2.)" in page.text
    assert "End of file" not in page.text
    assert open_positions(big) == []


async def test_a_window_stops_at_a_line_whose_end_is_too_far_to_look_for(
    tmp_path: Path,
) -> None:
    big = huge(tmp_path / "big.log", 64 * 1024**3)  # line 2001: zeros to the end
    t = Tools(FileTools(), Caller.at(tmp_path))
    page = await asyncio.wait_for(t.call("read", file_path="big.log", offset=2000, limit=5), SAFETY)
    assert not page.is_error, page.text
    assert "2000: line 02000\n2001: " in page.text
    assert "2002:" not in page.text
    assert "line 2001 is longer than 16777216 bytes" in page.text
    assert "use grep" in page.text
    assert open_positions(big) == []


async def test_an_offset_past_a_line_whose_end_is_too_far_is_a_clear_error(
    tmp_path: Path,
) -> None:
    big = huge(tmp_path / "big.log", 64 * 1024**3)
    t = Tools(FileTools(), Caller.at(tmp_path))
    page = await asyncio.wait_for(t.call("read", file_path="big.log", offset=2002), SAFETY)
    assert code(page) == "FS_TOO_LARGE", page.text
    assert f"line 2001 of {big} is longer than 16777216 bytes" in page.text
    assert "use grep" in page.text
    assert open_positions(big) == []


async def test_a_cut_last_line_that_ends_the_file_still_gives_the_total(tmp_path: Path) -> None:
    big = tmp_path / "rows.txt"
    body = b"".join(b"row %d\n" % number for number in range(1, 2_000_001))  # 23 MB
    big.write_bytes(body + b"b" * 20_000)  # and a last line of 20,000 characters, no end
    t = Tools(FileTools(), Caller.at(tmp_path))
    page = await asyncio.wait_for(t.call("read", file_path="rows.txt", offset=2_000_001), SAFETY)
    assert "2000001: " + "b" * 2000 + "... (line truncated" in page.text
    assert "(End of file: 2000001 lines in total.)" in page.text
