"""What stdio servers print on stderr: each line under its server's name, in a log file that
rotates at a cap (one older file kept), or in a given text stream."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from dsh_tool_mcp import DEFAULT_LOG_MAX_BYTES, McpServers

CAP = 64 * 1024


async def test_a_chatty_server_never_grows_the_log_beyond_its_cap(
    demo_stdio: Any, call: Any, registry: Any, tmp_path: Path
) -> None:
    log = tmp_path / "logs" / "mcp-servers.log"
    config = {"servers": {"demo": demo_stdio(timeout=60)}}
    async with McpServers(config, log_file=log, log_max_bytes=CAP) as servers:
        servers.register(registry)
        for _ in range(4):  # 4 MiB in all, 64 times the cap
            assert (await call("mcp__demo__chatter", {"kib": 1024})).text == "done"
    # closed: everything the server wrote has been through the log
    older = log.with_name("mcp-servers.log.1")
    assert sorted(p.name for p in log.parent.iterdir()) == [log.name, older.name]
    assert 0 < log.stat().st_size <= CAP
    assert CAP - 2048 <= older.stat().st_size <= CAP  # rotated when full, not before
    lines = (older.read_text() + log.read_text()).splitlines()
    assert lines[-1] == "[demo] chatter " + "x" * 1015


async def test_the_log_file_keeps_earlier_lines_until_the_cap(
    demo_stdio: Any, call: Any, registry: Any, tmp_path: Path
) -> None:
    log = tmp_path / "mcp-servers.log"
    log.write_text("an earlier line\n")
    async with McpServers({"servers": {"demo": demo_stdio()}}, log_file=log) as servers:
        servers.register(registry)
        assert (await call("mcp__demo__chatter", {"kib": 2})).text == "done"
    lines = log.read_text().splitlines()
    assert lines[0] == "an earlier line"
    assert lines[1:] == ["[demo] chatter " + "x" * 1015] * 2
    assert DEFAULT_LOG_MAX_BYTES >= 1024 * 1024


async def test_errlog_takes_any_text_stream(demo_stdio: Any, call: Any, registry: Any) -> None:
    errlog = io.StringIO()  # no file descriptor needed
    async with McpServers({"servers": {"demo": demo_stdio()}}, errlog=errlog) as servers:
        servers.register(registry)
        assert (await call("mcp__demo__chatter", {"kib": 1})).text == "done"
    assert errlog.getvalue().splitlines() == ["[demo] chatter " + "x" * 1015]


@pytest.mark.parametrize("cap", [0, 1000, -5])
def test_a_cap_below_64_kib_is_refused(tmp_path: Path, cap: int) -> None:
    with pytest.raises(ValueError, match="log_max_bytes"):
        McpServers({"servers": {}}, log_file=tmp_path / "x.log", log_max_bytes=cap)


def test_errlog_and_log_file_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="errlog"):
        McpServers({"servers": {}}, errlog=io.StringIO(), log_file=tmp_path / "x.log")
