"""Session ids as a person types them (issue 34 §2): ``sessions list`` in 80 columns with short
ids, the shortest unique prefix of an id accepted wherever an id is, ``--limit`` validated, and
``dsh run -c`` continuing the most recent session of this directory.

Every case runs the installed ``dsh`` console script in a real process (a fresh ``DSH_HOME``)
against conftest's scripted OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # conftest's classes, for the annotations only
    from conftest import Dsh, LoopbackModel


def _session_of(stderr: bytes) -> str:
    (session,) = re.findall(r"^session (\S+)$", stderr.decode(), re.MULTILINE)
    return session


def _run(dsh: Dsh, *args: str) -> str:
    done = dsh("run", *args)
    assert done.returncode == 0, done.stderr
    return _session_of(done.stderr)


def _rows(dsh: Dsh) -> list[dict[str, Any]]:
    listed = dsh("sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows: list[dict[str, Any]] = json.loads(listed.stdout)
    return rows


def _twin(dsh: Dsh, session_id: str, shared: int) -> str:
    """A copy of a stored session under an id that shares its first ``shared`` characters."""
    (row,) = [r for r in _rows(dsh) if r["session_id"] == session_id]
    source = Path(row["session_path"]).parent
    flipped = "0" if session_id[shared] != "0" else "1"
    twin = session_id[:shared] + flipped + session_id[shared + 1 :]
    target = source.parent / twin
    shutil.copytree(source, target)
    log = target / "session.jsonl"
    log.write_text(log.read_text().replace(session_id, twin))
    return twin


def test_sessions_list_fits_80_columns_with_short_ids(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("ok")]
    long_title = " ".join(["extraordinarily-long-word"] * 6)  # a title of 80 characters
    first = _run(dsh, long_title)
    second = _run(dsh, "short")
    dsh.extra_env["COLUMNS"] = "80"
    done = dsh("sessions", "list")
    assert done.returncode == 0, done.stderr
    table = done.stdout.decode()
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= 80, table
    assert len(lines) == 6, table  # header (3 lines), one line per session, the bottom rule
    for session_id in (first, second):
        assert re.search(rf"│ {session_id[:8]} +│", table), table
        assert session_id not in table
    assert "│ extraordinarily-long-word extraordin… │" in table, table
    listed = [row["session_id"] for row in _rows(dsh)]  # --json keeps the whole ids
    assert listed == [second, first]


def test_sessions_status_is_one_field_per_line_and_keeps_the_whole_id_and_path(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("ok")]
    session = _run(dsh, "a short title")
    dsh.extra_env["COLUMNS"] = "80"
    done = dsh("sessions", "status", session[:8])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    (row,) = [r for r in _rows(dsh) if r["session_id"] == session]
    assert lines[0] == f"session  {session}"
    assert f"log      {row['session_path']}" in lines  # whole, even past 80 columns
    assert [line.split()[0] for line in lines] == ["session", "title", "status", "updated", "log"]
    assert all(len(line) <= 80 for line in lines if not line.startswith("log ")), lines


def test_a_short_id_grows_until_it_is_unique(dsh: Dsh, model_server: LoopbackModel) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("ok")]
    session = _run(dsh, "hi")
    twin = _twin(dsh, session, 10)
    dsh.extra_env["COLUMNS"] = "80"
    table = dsh("sessions", "list").stdout.decode()
    assert f"│ {session[:11]} " in table, table
    assert f"│ {twin[:11]} " in table, table


@pytest.mark.parametrize("limit", ["0", "-1"])
def test_sessions_list_limit_must_be_at_least_one(
    dsh: Dsh, model_server: LoopbackModel, limit: str
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("ok")]
    _run(dsh, "hi")
    done = dsh("sessions", "list", "--limit", limit)
    assert done.returncode == 2, done.stderr
    assert "--limit" in done.stderr.decode()
    assert b"no sessions yet" not in done.stderr


def test_a_unique_prefix_names_the_session_everywhere(
    dsh: Dsh, model_server: LoopbackModel, tmp_path: Path
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("first answer"),
                            model_server.text_answer("again")]  # fmt: skip
    session = _run(dsh, "hi")
    prefix = session[:6]
    status = dsh("sessions", "status", prefix, "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["session_id"] == session
    show = dsh("sessions", "show", prefix)
    assert show.returncode == 0, show.stderr
    assert f"session {session}" in show.stdout.decode()
    raw = dsh("sessions", "show", "--raw", prefix)
    exported = dsh("sessions", "export", prefix)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == raw.stdout != b""
    assert dsh("sessions", "verify", prefix).returncode == 0
    assert _session_of(dsh("run", "--resume", prefix, "more").stderr) == session
    assert len(_rows(dsh)) == 1


def test_an_ambiguous_or_unknown_prefix_is_one_line_naming_it(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("ok")]
    session = _run(dsh, "hi")
    twin = _twin(dsh, session, 10)
    prefix = session[:10]
    for args in (["sessions", "show", prefix], ["run", "--resume", prefix, "go"]):
        done = dsh(*args)
        assert done.returncode == 1, done.stderr
        (line,) = done.stderr.decode().splitlines()
        assert line == (
            f"dsh: error: '{prefix}' matches 2 sessions: {min(session, twin)}, "
            f"{max(session, twin)}; type more of the id"
        ), line
    done = dsh("run", "--resume", "zzzz", "go")
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "dsh: error: no session starts with 'zzzz' (dsh sessions list shows the ids)"
    ]
    assert len(_rows(dsh)) == 2


def test_continue_resumes_the_latest_session_of_this_directory(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("ok")]
    elsewhere = dsh.cwd.parent / "elsewhere"
    elsewhere.mkdir()
    older = _run(dsh, "older")
    latest = _run(dsh, "latest")
    _run(dsh, "--cwd", str(elsewhere), "in another directory")
    for flag in ("-c", "--continue"):
        assert _session_of(dsh("run", flag, "go on").stderr) == latest
    assert older != latest
    assert "go on" in json.dumps(model_server.bodies[-1]["messages"])
    assert "latest" in json.dumps(model_server.bodies[-1]["messages"])
    assert len(_rows(dsh)) == 3


def test_continue_with_no_session_here_is_one_line(dsh: Dsh, model_server: LoopbackModel) -> None:
    dsh.configure(model_server)
    done = dsh("run", "-c", "go on")
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith("dsh: error: no session to continue in "), line
    assert str(dsh.cwd.resolve()) in line
    assert model_server.answered == 0
    assert _rows(dsh) == []


def test_continue_and_resume_together_is_a_usage_error(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    done = dsh("run", "-c", "--resume", "abc", "go")
    assert done.returncode == 2, done.stderr
    assert "--resume and --continue" in done.stderr.decode()
