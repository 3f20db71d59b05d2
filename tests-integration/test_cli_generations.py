"""Issue 35 §3-4 through the ``dsh`` command: a sessions root holding real logs the TypeScript
harness wrote in generations v2, v3 and v4 (the corpus of
``packages/dsh-session/tests/fixtures/upstream-generations``) lists, shows, exports byte for byte
and verifies; a damaged row is named by file and line; resuming one is refused, not appended."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import decode_header_line

DSH = Path(sys.executable).parent / "dsh"
TIMEOUT = 120.0
CORPUS = (
    Path(__file__).resolve().parent.parent
    / "packages/dsh-session/tests/fixtures/upstream-generations"
)
# one log per session id (text-turn exists as v2 and v3: the v3 one is its own scenario here)
LOGS = [p for p in sorted(CORPUS.glob("*.jsonl")) if p.name != "sdk--text-turn--session.v2.jsonl"]


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home.parent / "user"),
        "DSH_HOME": str(home),
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "COLUMNS": "200",
    }
    return subprocess.run(
        [str(DSH), *args], env=env, capture_output=True, timeout=TIMEOUT, check=False
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A DSH home whose plain sessions root holds the corpus at the harness's layout paths."""
    home = tmp_path / "dsh-home"
    (tmp_path / "user").mkdir()
    root = home / "sessions-plain"
    for source in LOGS:
        data = source.read_bytes()
        header, _ = decode_header_line(data.split(b"\n", 1)[0])
        directory = JsonlPersistence(root).log_path(header).parent
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"session.v{header.version}.jsonl").write_bytes(data)
    return home


def _ids() -> dict[str, Path]:
    return {decode_header_line(p.read_bytes().split(b"\n", 1)[0])[0].id: p for p in LOGS}


def test_list_shows_every_later_generation_log(home: Path) -> None:
    done = _run(home, "sessions", "list", "--json")
    assert done.returncode == 0, done.stderr.decode()
    rows = json.loads(done.stdout)
    assert {row["session_id"] for row in rows} == set(_ids())


def test_show_export_and_verify_read_each_generation(home: Path) -> None:
    for session_id, source in _ids().items():
        shown = _run(home, "sessions", "show", session_id)
        assert shown.returncode == 0, shown.stderr.decode()
        assert f"session {session_id}" in shown.stdout.decode()
        exported = _run(home, "sessions", "export", session_id)
        assert exported.returncode == 0, exported.stderr.decode()
        assert exported.stdout == source.read_bytes()
    verified = _run(home, "sessions", "verify")
    assert verified.returncode == 0, verified.stdout.decode()
    assert f"verified {len(LOGS)} sessions: {len(LOGS)} ok, 0 damaged" in verified.stderr.decode()


def test_show_prints_a_v4_tool_result_and_a_developer_change(home: Path) -> None:
    shown = _run(home, "sessions", "show", "session-dynamic-tool-updates-1").stdout.decode()
    assert "pong" in shown
    assert "[developer]: tools +snapshot_ping" in shown
    assert "[system]: You are a coding agent." in shown


def test_verify_names_the_file_and_line_of_a_bad_v4_row(home: Path) -> None:
    (path,) = (home / "sessions-plain").glob("*/*dynamic-tool-updates*/session.v4.jsonl")
    lines = path.read_bytes().split(b"\n")
    row = json.loads(lines[16])  # line 17: a tool/result
    assert row["type"] == "tool/result"
    row["data"]["message"]["role"] = "user"
    lines[16] = json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode()
    path.write_bytes(b"\n".join(lines))
    done = _run(home, "sessions", "verify")
    assert done.returncode == 1
    assert f"{path}:17: " in done.stdout.decode()
    assert "role 'tool'" in done.stdout.decode()
