"""The ``dsh`` command end to end: every case runs the installed console script in a real
subprocess with an explicit environment (a fresh ``DSH_HOME`` and ``HOME`` under the test's tmp
dir, no ``DSH_*`` of this process), and checks exit status, output and the files on disk.

Model calls are keyless (``dsh demo``'s scripted model, a ``scripted`` provider) or go to a tiny
OpenAI-compatible server on 127.0.0.1 started by the test (``core_sse_server.py``); nothing
touches the network beyond the loopback interface. Timeouts are safety nets, not speed bars.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence_jsonl import JsonlPersistence
from dsh_persistence_sqlite import SqlitePersistence
from dsh_session import interrupted_turn_closers
from shapes import flat

DSH = Path(sys.executable).parent / "dsh"
TIMEOUT = 120.0
"""Seconds one dsh command may take: a safety net against a hang, not a speed bar."""


def _load_sibling(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


sse = _load_sibling("core_sse_server")
tool_call_server = _load_sibling("tool_call_server")

ZSTD_AND_SQLITE = """\
[profiles.zstd.persistence]
compression = "zstd"

[profiles.sqlite.persistence]
backend = "sqlite"
"""


@dataclass
class Dsh:
    """The ``dsh`` command in a sandbox: ``home`` is DSH_HOME, ``user_home`` is HOME, ``cwd``
    is where commands run."""

    home: Path
    user_home: Path
    cwd: Path

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.user_home),
            "DSH_HOME": str(self.home),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "TERM": "dumb",
            "COLUMNS": "200",
        }
        return {**env, **(extra or {})}

    def __call__(
        self, *args: str, env: dict[str, str] | None = None, drop: tuple[str, ...] = ()
    ) -> subprocess.CompletedProcess[bytes]:
        environ = {k: v for k, v in self.env(env).items() if k not in drop}
        return subprocess.run(
            [str(DSH), *args],
            cwd=self.cwd,
            env=environ,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )

    def ok(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        done = self(*args, env=env)
        assert done.returncode == 0, (args, done.stdout.decode(), done.stderr.decode())
        assert b"Traceback" not in done.stderr
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args).stdout)

    def demo(self, *options: str) -> dict[str, Any]:
        """Run ``dsh [options] demo --json``; its status row."""
        row: dict[str, Any] = self.json(*options, "demo", "--json")
        return row

    def config(self, text: str) -> Path:
        self.home.mkdir(parents=True, exist_ok=True)
        path = self.home / "config.toml"
        path.write_text(text)
        return path


@pytest.fixture
def dsh(tmp_path: Path) -> Dsh:
    assert DSH.exists(), f"the dsh console script is not installed next to {sys.executable}"
    user_home = tmp_path / "user"
    cwd = tmp_path / "project"
    user_home.mkdir()
    cwd.mkdir()
    return Dsh(home=tmp_path / "dsh-home", user_home=user_home, cwd=cwd)


def log_records(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def tool_result_text(records: list[dict[str, Any]]) -> str:
    (result,) = [r for r in records if r.get("type") == "tool/result"]
    return "".join(block["text"] for block in flat("tool/result", result["data"])["content"])


def one_error_line(done: subprocess.CompletedProcess[bytes]) -> str:
    """The single ``dsh: error:`` line of a failed command (and nothing like a traceback)."""
    assert done.returncode != 0
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("dsh: error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


# -- demo, list, status, show -----------------------------------------------------------------


def test_demo_runs_keyless_and_its_bash_child_saw_the_current_facts(dsh: Dsh) -> None:
    stale = {"DSH_SESSION_ID": "stale-session", "DSH_STALE_PARENT": "stale"}
    done = dsh.ok("demo", "--json", env=stale)
    row = json.loads(done.stdout)
    session_id = row["session_id"]
    assert row["status"] == "cold"
    assert row["title"] == "Show me what a DSH"
    path = Path(row["session_path"])
    assert path.name == "session.jsonl"
    assert path.is_relative_to(dsh.home / "sessions-plain")
    records = log_records(path)
    assert records[0]["type"] == "session"
    assert records[0]["id"] == session_id
    assert records[0]["cwd"] == str(dsh.cwd)
    assert tool_result_text(records) == (
        f"DSH_HOME={dsh.home}\nDSH_SHELL=1\nDSH_SESSION_ID={session_id}\ncwd={dsh.cwd}\n"
    )
    assert records[-1]["type"] == "turn/end"
    assert records[-1]["data"]["reason"] == {"kind": "completed"}


def test_demo_prints_the_transcript_its_row_and_what_to_try_next(dsh: Dsh) -> None:
    done = dsh.ok("demo")
    stdout = done.stdout.decode()
    assert "DSH_SHELL=1" in stdout
    assert f"DSH_HOME={dsh.home}" in stdout
    (log,) = [line for line in stdout.splitlines() if line.startswith("log: ")]
    assert Path(log.removeprefix("log: ")).is_file()
    assert "Next: dsh sessions list · dsh sessions show " in stdout


def test_sessions_list_shows_the_most_recent_first_with_a_limit(dsh: Dsh) -> None:
    assert dsh.json("sessions", "list", "--json") == []
    first, second = dsh.demo(), dsh.demo()
    rows = dsh.json("sessions", "list", "--json")
    assert [r["session_id"] for r in rows] == [second["session_id"], first["session_id"]]
    totals = [row.pop("totals") for row in rows]  # the usage totals (issue 33, 4)
    assert rows == [second, first]
    assert all(t["calls"] >= 1 and t["cost_usd"] is None for t in totals), totals
    (latest,) = dsh.json("sessions", "list", "--limit", "1", "--json")
    assert latest.pop("totals") == totals[0]
    assert latest == second
    table = dsh.ok("sessions", "list").stdout.decode()
    assert first["session_id"][:8] in table  # ids shortened to a unique prefix (issue 34)
    assert second["session_id"][:8] in table


def test_sessions_status_of_a_stored_and_of_a_missing_session(dsh: Dsh) -> None:
    row = dsh.demo()
    assert dsh.json("sessions", "status", row["session_id"], "--json") == row
    missing = dsh("sessions", "status", "no-such-session", "--json")
    assert missing.returncode == 1
    assert json.loads(missing.stdout) == {"session_id": "no-such-session", "status": "missing"}


def test_sessions_show_prints_a_transcript_and_raw_prints_the_log_itself(dsh: Dsh) -> None:
    row = dsh.demo()
    transcript = dsh.ok("sessions", "show", row["session_id"]).stdout.decode()
    assert f"session {row['session_id']} · cwd {dsh.cwd}" in transcript
    assert "user: Show me what a DSH bash child knows about its harness, then stop." in transcript
    assert "⏺ bash: printf" in transcript
    assert "DSH_SHELL=1" in transcript
    assert "assistant: The bash child saw its DSH home" in transcript
    assert "turn 1 ended: completed" in transcript
    raw = dsh.ok("sessions", "show", "--raw", row["session_id"]).stdout
    assert raw == Path(row["session_path"]).read_bytes()


def test_an_unknown_session_is_one_error_line_naming_it(dsh: Dsh) -> None:
    dsh.demo()
    for command in (["sessions", "show"], ["sessions", "export"], ["run", "--resume"]):
        args = [*command, "no-such-session"] + (["hello"] if command[0] == "run" else [])
        assert "no-such-session" in one_error_line(dsh(*args)), args


def test_env_lists_the_managed_variables_and_the_home(dsh: Dsh) -> None:
    rows = dsh.json("env", "--json")
    assert [r["key"] for r in rows] == ["DSH_HOME", "DSH_SHELL", "DSH_SESSION_ID"]
    assert f"DSH_HOME here: {dsh.home}" in dsh.ok("env").stdout.decode()


def test_home_and_config_options_win_over_the_environment(dsh: Dsh, tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    row = dsh.demo("--home", str(other))
    assert Path(row["session_path"]).is_relative_to(other / "sessions-plain")
    assert not dsh.home.exists()
    config = tmp_path / "elsewhere.toml"
    config.write_text('[persistence]\nroot = "' + str(tmp_path / "custom-root") + '"\n')
    row = dsh.demo("--config", str(config))
    assert Path(row["session_path"]).is_relative_to(tmp_path / "custom-root")


# -- export, migrate, verify ------------------------------------------------------------------


async def _copy_into_sqlite(zstd_root: Path, database: Path, session_id: str) -> None:
    """Store the same log in SQLite, event for event, through the public persistence API."""
    source = JsonlPersistence(zstd_root, compression="zstd")
    target = SqlitePersistence(database)
    try:
        async with await source.open(session_id, "read") as reader:
            events = list(await reader.read(0))
            handle = await target.create(
                reader.header, inherited_event_count=reader.inherited_event_count
            )
        async with handle:
            await handle.append(events)
            await handle.flush()
    finally:
        await source.aclose()
        await target.aclose()


def test_export_is_the_same_bytes_from_jsonl_zstd_and_sqlite(dsh: Dsh, tmp_path: Path) -> None:
    dsh.config(ZSTD_AND_SQLITE)
    row = dsh.demo("--profile", "zstd")
    session_id = row["session_id"]
    assert "session_path" not in row  # a zstd log is not a plain file
    asyncio.run(_copy_into_sqlite(dsh.home / "sessions", dsh.home / "sessions.sqlite3", session_id))

    from_zstd = dsh.ok("--profile", "zstd", "sessions", "export", session_id).stdout
    from_sqlite = dsh.ok("--profile", "sqlite", "sessions", "export", session_id).stdout
    assert from_zstd == from_sqlite
    records = [json.loads(line) for line in from_zstd.decode("utf-8").splitlines()]
    assert records[0]["type"] == "session"
    assert records[0]["id"] == session_id
    assert records[-1]["type"] == "turn/end"
    sqlite_rows = dsh.json("--profile", "sqlite", "sessions", "list", "--json")
    assert [(r["session_id"], "session_path" in r) for r in sqlite_rows] == [(session_id, False)]

    out = tmp_path / "one.jsonl"
    done = dsh.ok("--profile", "sqlite", "sessions", "export", session_id, "-o", str(out))
    assert out.read_bytes() == from_zstd
    assert str(out) in done.stderr.decode()
    second = dsh.demo("--profile", "zstd")["session_id"]
    archive = tmp_path / "both.zip"
    export = ("sessions", "export", session_id, second, session_id, "-o", str(archive))
    dsh.ok("--profile", "zstd", *export)  # an id named twice is exported once
    with zipfile.ZipFile(archive) as opened:
        assert sorted(opened.namelist()) == sorted([f"{session_id}.jsonl", f"{second}.jsonl"])
        assert opened.read(f"{session_id}.jsonl") == from_zstd
    twice = tmp_path / "twice.zip"  # one id named twice: still the zip that was asked for
    dsh.ok("--profile", "zstd", "sessions", "export", session_id, session_id, "-o", str(twice))
    with zipfile.ZipFile(twice) as opened:
        assert opened.namelist() == [f"{session_id}.jsonl"]
    not_zip = dsh("--profile", "zstd", "sessions", "export", session_id, second)
    assert "needs -o FILE.zip" in one_error_line(not_zip)


def test_migrate_copies_zstd_logs_to_plain_keeps_the_source_and_verify_passes(dsh: Dsh) -> None:
    dsh.config(ZSTD_AND_SQLITE)
    ids = [dsh.demo("--profile", "zstd")["session_id"] for _ in range(2)]
    source = dsh.home / "sessions"
    before = {p: p.read_bytes() for p in source.rglob("*") if p.is_file()}
    assert sorted(p.name for p in before if p.name.endswith(".zstd")) == ["session.jsonl.zstd"] * 2
    exported = {i: dsh.ok("--profile", "zstd", "sessions", "export", i).stdout for i in ids}

    done = dsh.ok("sessions", "migrate")
    assert "migrated 2, skipped 0 (already there), failed 0" in done.stderr.decode()
    assert "(source kept)" in done.stderr.decode()
    assert {p: p.read_bytes() for p in source.rglob("*") if p.is_file()} == before

    rows = dsh.json("sessions", "list", "--json")
    assert sorted(r["session_id"] for r in rows) == sorted(ids)
    for row in rows:
        path = Path(row["session_path"])
        assert path.is_relative_to(dsh.home / "sessions-plain")
        # The plain log is the whole log: the same bytes any backend exports.
        assert path.read_bytes() == exported[row["session_id"]]
    verified = dsh.ok("sessions", "verify")
    assert "verified 2 sessions: 2 ok, 0 damaged" in verified.stderr.decode()
    again = dsh.ok("sessions", "migrate")
    assert "migrated 0, skipped 2 (already there), failed 0" in again.stderr.decode()


def test_migrate_without_a_source_root_is_one_error_line(dsh: Dsh) -> None:
    line = one_error_line(dsh("sessions", "migrate"))
    assert str(dsh.home / "sessions") in line


def test_verify_names_the_file_and_line_of_a_corrupted_log(dsh: Dsh) -> None:
    good, bad = dsh.demo(), dsh.demo()
    path = Path(bad["session_path"])
    lines = path.read_bytes().split(b"\n")
    middle = len(lines) // 2
    assert 1 < middle < len(lines) - 2
    lines[middle] = b"not json"
    path.write_bytes(b"\n".join(lines))

    done = dsh("sessions", "verify")
    assert done.returncode == 1
    stdout = done.stdout.decode()
    assert f"{path}:{middle + 1}: " in stdout
    assert f"(session {bad['session_id']})" in stdout
    assert good["session_id"] not in stdout
    assert "verified 2 sessions: 1 ok, 1 damaged" in done.stderr.decode()
    assert dsh("sessions", "verify", good["session_id"]).returncode == 0
    named = dsh("sessions", "verify", bad["session_id"])
    assert named.returncode == 1
    assert f"{path}:{middle + 1}: " in named.stdout.decode()
    missing = dsh("sessions", "verify", "no-such-session")
    assert missing.returncode == 1
    assert "session no-such-session: not found" in missing.stdout.decode()
    assert "Traceback" not in (done.stderr + named.stderr + missing.stderr).decode()


# -- config -----------------------------------------------------------------------------------


def test_the_plain_profile_dumps_sessions_plain_without_compression_or_packing(dsh: Dsh) -> None:
    dsh.config(
        '[persistence]\ncompression = "zstd"\n\n'
        '[profiles.plain.persistence]\ncompression = "none"\npack_chunks = false\n'
    )
    dumped = dsh.json("--profile", "plain", "config", "--dump", "--json")
    assert dumped["profile"] == "plain"
    assert dumped["persistence"] == {
        "backend": "jsonl",
        "root": str(dsh.home / "sessions-plain"),
        "compression": "none",
        "pack_chunks": False,
        "path": None,
        "sqlite_compression": True,
        "dsn_env": "DSH_POSTGRES_DSN",
        "postgres_schema": "dsh",
    }
    toml = dsh.ok("--profile", "plain", "config", "--dump").stdout.decode()
    assert f'root = "{dsh.home / "sessions-plain"}"' in toml
    assert 'compression = "none"' in toml
    assert "pack_chunks = false" in toml
    from_env = json.loads(dsh("config", "--json", env={"DSH_PROFILE": "plain"}).stdout)
    assert from_env["persistence"]["compression"] == "none"
    assert dsh.json("config", "--json")["persistence"]["compression"] == "zstd"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('colour = "blue"\n', "colour"),
        ("[bash]\ntimeout = -1\n", "bash.timeout"),
        ('model = "no-colon"\n', "model"),
        ("model = \n", "is not valid TOML"),
    ],
    ids=["unknown-key", "bad-value", "bad-route", "broken-toml"],
)
def test_a_bad_config_is_one_error_line_naming_file_and_key(dsh: Dsh, text: str, key: str) -> None:
    path = dsh.config(text)
    for command in (["config", "--dump"], ["demo"], ["sessions", "list"]):
        line = one_error_line(dsh(*command))
        assert line.startswith(f"dsh: error: config {path}"), line
        assert key in line
    debug = dsh("--debug", "config", "--dump")
    assert debug.returncode != 0
    assert b"Traceback" in debug.stderr
    assert b"ConfigError" in debug.stderr


def test_an_unknown_profile_is_one_error_line_naming_it(dsh: Dsh) -> None:
    path = dsh.config(ZSTD_AND_SQLITE)
    line = one_error_line(dsh("--profile", "nope", "config", "--dump"))
    assert line == (
        f"dsh: error: config {path}: profiles.nope: no such profile (defined: sqlite, zstd)"
    )
    assert "profiles.nope" in one_error_line(dsh("config", env={"DSH_PROFILE": "nope"}))


def test_compose_with_two_homes_is_one_error_line_naming_both(dsh: Dsh, tmp_path: Path) -> None:
    other = tmp_path / "skills-home"
    dsh.config(f'[skills.local]\ndsh_home = "{other}"\n')
    line = one_error_line(dsh("demo"))
    assert str(dsh.home) in line
    assert str(other) in line


# -- run: providers from the config -----------------------------------------------------------

SECRET = "sk-test-0123456789-do-not-log"


def _provider_config(base_url: str) -> str:
    return f'[providers.local]\nbase_url = "{base_url}"\napi_key_env = "LOCAL_LLM_KEY"\n'


def test_run_streams_from_an_openai_compatible_provider_and_never_shows_the_key(
    dsh: Dsh,
) -> None:
    with sse.SseServer(["Hi", " there", ", from the local server."]) as server:
        dsh.config(_provider_config(server.base_url))
        key = {"LOCAL_LLM_KEY": SECRET}
        done = dsh.ok("run", "--model", "local:test-model", "Say hi", env=key)
        requests = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert done.stdout.decode().strip() == "Hi there, from the local server."
    assert len(requests) == 1
    (request,) = requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    body = request.json()
    assert body["model"] == "test-model"
    assert body["stream"] is True
    # One user turn (strict chat templates refuse two in a row): the runtime context, then the
    # prompt, last, where the model answers it.
    (user,) = [m for m in body["messages"] if m["role"] == "user"]
    assert user["content"].endswith("\n\nSay hi")
    assert user["content"].startswith("The session's runtime context now")

    stderr = done.stderr.decode()
    (session_line,) = [line for line in stderr.splitlines() if line.startswith("session ")]
    (log_line,) = [line for line in stderr.splitlines() if line.startswith("log: ")]
    session_id = session_line.removeprefix("session ")
    log = Path(log_line.removeprefix("log: "))
    records = log_records(log)
    assert records[0]["id"] == session_id
    assert records[-1]["data"]["reason"] == {"kind": "completed"}
    headers = [r for r in records if r["type"] == "request/header"]
    assert headers
    assert headers[0]["data"]["header"]["config"]["provider"] == "local"
    assert headers[0]["data"]["header"]["config"]["model"] == "test-model"

    dumps = [
        dsh.ok("config", "--dump", env=key).stdout,
        dsh.ok("config", "--dump", "--json", env=key).stdout,
    ]
    providers = json.loads(dumps[1])["providers"]
    assert providers["local"]["api_key"] == "***"  # set, and never shown
    assert providers["local"]["api_key_env"] == "LOCAL_LLM_KEY"
    secret = SECRET.encode()
    for output in (*dumps, done.stdout, done.stderr):
        assert secret not in output
    for path in dsh.home.rglob("*"):
        if path.is_file():
            assert secret not in path.read_bytes(), path


def test_run_with_the_builtin_deepseek_provider_reads_its_key_variable(dsh: Dsh) -> None:
    """`dsh run --model deepseek:deepseek-v4-flash` with DEEPSEEK_API_KEY set: only the base URL is
    pointed at the local server; the built-in provider's key variable stays."""
    with sse.SseServer(["Hello", " from deepseek."]) as server:
        dsh.config(f'[providers.deepseek]\nbase_url = "{server.base_url}"\n')
        key = {"DEEPSEEK_API_KEY": SECRET}
        done = dsh.ok("run", "--model", "deepseek:deepseek-v4-flash", "Say hello", env=key)
        requests = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert done.stdout.decode().strip() == "Hello from deepseek."
    (request,) = requests
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.json()["model"] == "deepseek-v4-flash"
    provider = json.loads(dsh.ok("config", "--json", env=key).stdout)["providers"]["deepseek"]
    assert provider["api_key_env"] == "DEEPSEEK_API_KEY"
    assert provider["base_url"] == server.base_url


def test_run_without_the_key_variable_fails_naming_it(dsh: Dsh) -> None:
    with sse.SseServer(["unreachable"]) as server:
        dsh.config(_provider_config(server.base_url))
        done = dsh("run", "--model", "local:test-model", "Say hi")
        requests = server.requests
    line = one_error_line(done)
    assert "the environment variable LOCAL_LLM_KEY is not set" in line
    assert "local:test-model" in line
    assert requests == []  # refused before any request
    assert dsh.json("sessions", "list", "--json") == []  # and before any session was created
    unset = json.loads(dsh.ok("config", "--json").stdout)["providers"]["local"]["api_key"]
    assert unset == "(not set)"


def test_run_resume_continues_the_same_session(dsh: Dsh) -> None:
    dsh.config('[providers.canned]\nkind = "scripted"\nreplies = ["Canned answer."]\n')
    first = dsh.ok("run", "--model", "canned:any", "first question")
    assert first.stdout.decode().strip() == "Canned answer."
    session_id = first.stderr.decode().split("session ", 1)[1].split()[0]
    second = dsh.ok("run", "--resume", session_id, "second question")
    assert f"session {session_id}" in second.stderr.decode()
    (row,) = dsh.json("sessions", "list", "--json")
    assert row["session_id"] == session_id
    assert row["title"] == "first question"
    records = log_records(row["session_path"])
    turns = [r["data"] for r in records if r["type"] == "turn/end"]
    assert turns == [
        {"turn": 1, "reason": {"kind": "completed"}},
        {"turn": 2, "reason": {"kind": "completed"}},
    ]
    prompts = [
        r["data"]["content"][0]["text"]
        for r in records
        if r["type"] == "user/message" and r["data"]["source"] == {"kind": "user"}
    ]
    assert prompts == ["first question", "second question"]


CANNED_SUMMARY = '[providers.canned]\nkind = "scripted"\nreplies = ["- the user asked twice"]\n'
LONG_PROMPT = "Please look into the build failure of the parser module. " * 30


def test_sessions_compact_replaces_the_history_with_a_checkpoint_and_run_goes_on(
    dsh: Dsh,
) -> None:
    dsh.config(CANNED_SUMMARY)
    first = dsh.ok("run", "--model", "canned:any", LONG_PROMPT)
    session_id = first.stderr.decode().split("session ", 1)[1].split()[0]
    dsh.ok("run", "--resume", session_id, "and the lexer?")
    done = dsh.ok("sessions", "compact", session_id)
    line = done.stdout.decode().strip()
    assert re.fullmatch(
        rf"session {session_id}: compacted \d+ conversation items, ~(\d+) → ~(\d+) tokens "
        r"\(compaction [0-9a-f-]{36}\)",
        line,
    ), line
    before, after = (int(n) for n in re.findall(r"~(\d+)", line))
    assert after < before
    (row,) = dsh.json("sessions", "list", "--json")
    records = log_records(row["session_path"])
    kinds = [r["type"] for r in records[1:]]
    tail = kinds[kinds.index("compaction/start") :]
    assert tail == ["compaction/start", "compaction/summary", "user/message", "compaction/end"]
    start, summary, checkpoint, end = records[-4:]
    compaction_id = start["data"]["compactionId"]
    assert start["data"] == {"compactionId": compaction_id, "turn": None}  # owner-less
    assert compaction_id in line
    assert end["data"] == {"compactionId": compaction_id, "turn": None}
    assert summary["data"]["summary"] == [{"type": "text", "text": "- the user asked twice"}]
    assert checkpoint["surfaceOp"]["op"] == "replace"
    assert checkpoint["data"]["source"] == {
        "kind": "plugin",
        "plugin": "compact",
        "compactionId": compaction_id,
    }
    assert checkpoint["sourceEventSeqs"][:2] == [start["seq"], summary["seq"]]
    texts = [block["text"] for block in checkpoint["data"]["content"]]
    assert texts[1:] == ["- the user asked twice", "</compacted-summary>"]
    assert texts[0].endswith("<compacted-summary>")
    assert "1 ok, 0 damaged" in dsh.ok("sessions", "verify", session_id).stderr.decode()
    # the session goes on from the checkpoint; the originals stay in the log
    dsh.ok("run", "--resume", session_id, "go on")
    records = log_records(row["session_path"])
    assert LONG_PROMPT.strip() in json.dumps(records)
    assert [r["data"]["reason"] for r in records if r["type"] == "turn/end"][-1] == {
        "kind": "completed"
    }


def test_sessions_compact_that_fails_is_one_line_and_changes_nothing(dsh: Dsh) -> None:
    """A summary not smaller than what it would replace: exit 1, one sentence, the attempt
    logged (start + end with its error), the conversation unchanged."""
    dsh.config(f'[providers.canned]\nkind = "scripted"\nreplies = ["{"a long answer " * 40}"]\n')
    first = dsh.ok("run", "--model", "canned:any", "hi")
    session_id = first.stderr.decode().split("session ", 1)[1].split()[0]
    (row,) = dsh.json("sessions", "list", "--json")
    before = log_records(row["session_path"])
    line = one_error_line(dsh("sessions", "compact", session_id))
    assert f"session '{session_id}' was not compacted" in line
    assert "NOT_SMALLER" in line
    assert "the conversation is unchanged" in line
    after = log_records(row["session_path"])
    assert after[: len(before)] == before
    assert [r["type"] for r in after[len(before) :]] == ["compaction/start", "compaction/end"]
    assert "not smaller" in after[-1]["data"]["error"]
    assert one_error_line(dsh("sessions", "compact", "no-such-session")) == (
        "dsh: error: session 'no-such-session' not found"
    )


def test_run_with_an_unknown_provider_is_one_error_line(dsh: Dsh) -> None:
    line = one_error_line(dsh("run", "--model", "nowhere:model", "hello"))
    assert "nowhere" in line
    assert dsh.json("sessions", "list", "--json") == []


def test_run_with_an_unknown_preset_names_the_preset(dsh: Dsh) -> None:
    line = one_error_line(dsh("run", "--preset", "nope", "hello"))
    assert "presets.nope: no such preset" in line


def test_a_bad_dsh_model_names_the_variable(dsh: Dsh) -> None:
    dsh.config('model = "canned:fine"\n[providers.canned]\nkind = "scripted"\n')
    line = one_error_line(dsh("config", "--dump", env={"DSH_MODEL": "no-colon"}))
    assert "DSH_MODEL" in line


# -- signals ----------------------------------------------------------------------------------


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its reaper is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_for_file(path: Path, process: subprocess.Popen[bytes]) -> str:
    """The content of ``path`` once it appears (written by rename, so whole), while ``process``
    still runs. The deadline is a hang guard."""
    deadline = time.monotonic() + TIMEOUT
    while not path.exists():
        assert process.poll() is None, f"dsh exited early with {process.returncode}"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return path.read_text().strip()


def _sleeper(pid_file: Path) -> str:
    """A command that publishes its pid in ``pid_file`` (by rename, so whole) and sleeps."""
    return f"echo $$ > {pid_file}.part && mv {pid_file}.part {pid_file} && exec sleep 600"


@dataclass
class Signalled:
    """How a ``dsh run`` that got a signal ended."""

    returncode: int
    stderr: str
    survivors: list[int]
    """The pids of the sleepers still running once dsh had exited (killed by the test after)."""
    ignored: set[int]
    """The signals dsh ignored (kernel ``SigIgn``) while its commands ran."""


def _ignored_signals(pid: int) -> set[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            mask = int(line.split()[1], 16)
            return {bit + 1 for bit in range(64) if mask >> bit & 1}
    raise AssertionError(f"/proc/{pid}/status has no SigIgn line")


FULL_ACCESS = '[sandbox]\nmode = "danger-full-access"\n'


def _signal_run(
    dsh: Dsh,
    tmp_path: Path,
    calls: list[dict[str, Any]],
    pid_files: list[Path],
    signals: list[int],
    *,
    launcher: tuple[str, ...] = (),
) -> Signalled:
    """``dsh run`` (through ``launcher``, which must exec it) against a server that answers
    ``calls``; once every pid file exists, send ``signals`` to dsh in order and wait for it to
    exit. The commands run unconfined: these cases follow host pids (a sandboxed command has
    its own PID namespace; test_sandbox_escape.py covers that a kill leaves nothing of it)."""
    with tool_call_server.ToolCallServer(calls) as server:
        dsh.config(_provider_config(server.base_url) + FULL_ACCESS)
        with (tmp_path / "stdout").open("wb") as stdout, (tmp_path / "stderr").open("wb") as err:
            process = subprocess.Popen(
                [*launcher, str(DSH), "run", "--model", "local:test-model", "Sleep for a while"],
                cwd=dsh.cwd,
                env=dsh.env({"LOCAL_LLM_KEY": SECRET}),
                stdout=stdout,
                stderr=err,
            )
            pids: list[int] = []
            try:
                for path in pid_files:
                    pids.append(int(_wait_for_file(path, process)))
                assert all(_running(pid) for pid in pids)
                ignored = _ignored_signals(process.pid)
                for signum in signals:
                    process.send_signal(signum)
                returncode = process.wait(timeout=TIMEOUT)
                survivors = [pid for pid in pids if _running(pid)]
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
                for pid in pids:
                    if _running(pid):
                        os.kill(pid, signal.SIGKILL)  # what the code under test failed to do
    return Signalled(returncode, (tmp_path / "stderr").read_text(), survivors, ignored)


def _closed_log(dsh: Dsh) -> list[dict[str, Any]]:
    """The records of the one stored session, after checking with the JSONL backend that its
    log is balanced (nothing for a resume to repair) and that no one owns it any more."""

    async def reopen() -> list[dict[str, Any]]:
        persistence = JsonlPersistence(dsh.home / "sessions-plain")
        try:
            (snapshot,) = await persistence.list()
            async with await persistence.open(snapshot.id, "read") as handle:
                events = list(await handle.read(0))
            assert interrupted_turn_closers(events) == []
            async with await persistence.open(snapshot.id, "write"):
                pass  # the dying process released its ownership
            assert snapshot.plain_path is not None
            records = log_records(snapshot.plain_path)
            assert records[0]["type"] == "session"
            assert records[0]["id"] == snapshot.id
            assert len(records) == len(events) + 1
            return records
        finally:
            await persistence.aclose()

    return asyncio.run(reopen())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_during_a_bash_command_kills_it_closes_the_log_and_exits_128_plus_signum(
    dsh: Dsh, tmp_path: Path, signum: signal.Signals
) -> None:
    """`dsh run` whose model runs `sleep 600` gets a real SIGTERM (or SIGHUP) while it sleeps:
    the sleep is killed, the session log is complete (the turn closed by the loop's own cancel
    events, nothing for a resume to repair), ownership is released, and dsh exits 128+signum."""
    pid_file = tmp_path / "sleep.pid"
    command = _sleeper(pid_file)
    calls: list[dict[str, Any]] = [{"command": command, "description": "Sleep"}]
    done = _signal_run(dsh, tmp_path, calls, [pid_file], [signum])
    assert done.survivors == []
    assert done.returncode == 128 + signum, done.stderr
    assert "Traceback" not in done.stderr

    records = _closed_log(dsh)
    kinds = [r["type"] for r in records[1:]]
    assert kinds[:4] == ["permission/preset", "sandbox/mode", "approval/policy", "turn/start"]
    assert kinds[-2:] == ["step/end", "turn/end"]
    (call,) = [r for r in records if r["type"] == "tool/call"]
    assert call["data"]["callId"] == "call-1"
    assert json.loads(call["data"]["arguments"])["command"] == command
    (result,) = [
        {**r, "data": flat("tool/result", r["data"])} for r in records if r["type"] == "tool/result"
    ]
    assert result["data"]["callId"] == "call-1"
    assert result["data"]["isError"] is True
    assert result["data"]["error"]["code"] == "ABORTED"
    assert records[-1]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}


def test_sigterm_also_kills_the_background_jobs_the_run_started(dsh: Dsh, tmp_path: Path) -> None:
    """The model starts a background job, then a foreground command; SIGTERM kills both."""
    job_pid, command_pid = tmp_path / "job.pid", tmp_path / "command.pid"
    calls: list[dict[str, Any]] = [
        {"command": _sleeper(job_pid), "description": "a job", "run_in_background": True},
        {"command": _sleeper(command_pid), "description": "a command"},
    ]
    done = _signal_run(dsh, tmp_path, calls, [job_pid, command_pid], [signal.SIGTERM])
    assert done.survivors == []
    assert done.returncode == 143, done.stderr

    records = _closed_log(dsh)
    results = {
        flat("tool/result", r["data"])["callId"]: flat("tool/result", r["data"])
        for r in records
        if r["type"] == "tool/result"
    }
    assert results["call-1"]["isError"] is False  # the job started; its notice never came
    assert results["call-2"]["error"]["code"] == "ABORTED"
    assert records[-1]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}


def test_under_nohup_a_hangup_is_still_ignored(dsh: Dsh, tmp_path: Path) -> None:
    """dsh started with SIGHUP ignored (as `nohup` starts it) keeps ignoring it (the kernel
    discards the hangup), and the SIGTERM sent after it is what ends the run."""
    pid_file = tmp_path / "sleep.pid"
    calls: list[dict[str, Any]] = [{"command": _sleeper(pid_file), "description": "Sleep"}]
    nohup = ("sh", "-c", 'trap "" HUP; exec "$0" "$@"')
    done = _signal_run(
        dsh, tmp_path, calls, [pid_file], [signal.SIGHUP, signal.SIGTERM], launcher=nohup
    )
    assert signal.SIGHUP in done.ignored
    assert signal.SIGTERM not in done.ignored
    assert done.survivors == []
    assert done.returncode == 143, done.stderr
    records = _closed_log(dsh)
    assert records[-1]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}


# -- the sandbox and approvals (issue 22 §2) --------------------------------------------------

NO_BWRAP = '[sandbox]\nbwrap = "/nonexistent/bwrap"\n'


def _records_of_only_session(dsh: Dsh) -> list[dict[str, Any]]:
    (row,) = dsh.json("sessions", "list", "--json")
    return log_records(row["session_path"])


def _escalation(target: Path) -> dict[str, Any]:
    return {
        "command": f"echo escalated > {target}",
        "description": "Write outside the workspace",
        "sandbox_permissions": "danger-full-access",
        "justification": "The test asks for a file outside the workspace.",
    }


def test_run_refuses_to_start_where_bubblewrap_cannot_run_and_names_the_fix(dsh: Dsh) -> None:
    dsh.config(NO_BWRAP + '[providers.canned]\nkind = "scripted"\nreplies = ["Hi."]\n')
    line = one_error_line(dsh("run", "--model", "canned:any", "hello"))
    assert "the workspace-write sandbox cannot run here" in line
    assert "fix: install bubblewrap: apt-get install bubblewrap" in line
    assert "--sandbox danger-full-access" in line
    assert dsh.json("sessions", "list", "--json") == []  # refused before any session existed
    done = dsh.ok("run", "--model", "canned:any", "--sandbox", "danger-full-access", "hello")
    assert done.stdout.decode().strip() == "Hi."
    records = _records_of_only_session(dsh)
    assert [r["data"] for r in records[1:4]] == [
        {"preset": "danger-full-access"},
        {"mode": "danger-full-access"},
        {"policy": "never"},
    ]


def test_env_and_demo_say_whether_the_sandbox_runs(dsh: Dsh) -> None:
    env_out = dsh.ok("env").stdout.decode()
    assert "sandbox: available (" in env_out
    assert "mode workspace-write" in env_out
    demo = dsh.ok("demo")
    assert "sandbox: workspace-write" in demo.stderr.decode()
    dsh.config(NO_BWRAP)
    env_out = dsh.ok("env").stdout.decode()
    assert "sandbox: unavailable: " in env_out
    assert "fix: install bubblewrap" in env_out
    demo = dsh.ok("demo")
    assert "sandbox unavailable (" in demo.stderr.decode()


def test_run_without_a_terminal_denies_an_escalation_as_unavailable(
    dsh: Dsh, tmp_path: Path
) -> None:
    target = tmp_path / "outside.txt"
    with tool_call_server.ToolCallServer([_escalation(target), "Done."]) as server:
        dsh.config(_provider_config(server.base_url))
        dsh.ok("run", "--model", "local:test-model", "write it", env={"LOCAL_LLM_KEY": SECRET})
    records = _records_of_only_session(dsh)
    asked = [r["data"] for r in records if r["type"] == "approval/asked"]
    decided = [r["data"] for r in records if r["type"] == "approval/decided"]
    assert [a["reason"] for a in asked] == [
        "escalate sandbox to danger-full-access: The test asks for a file outside the workspace."
    ]
    assert [d["outcome"] for d in decided] == ["unavailable"]
    assert "no approval channel is available" in tool_result_text(records)
    assert not target.exists()


def test_run_with_approval_never_rejects_an_escalation_before_asking(
    dsh: Dsh, tmp_path: Path
) -> None:
    target = tmp_path / "outside.txt"
    with tool_call_server.ToolCallServer([_escalation(target), "Done."]) as server:
        dsh.config(_provider_config(server.base_url))
        dsh.ok(
            "run",
            "--model",
            "local:test-model",
            "--approval",
            "never",
            "write it",
            env={"LOCAL_LLM_KEY": SECRET},
        )
    records = _records_of_only_session(dsh)
    assert [r["data"]["policy"] for r in records if r["type"] == "approval/policy"] == ["never"]
    decided = [r["data"]["outcome"] for r in records if r["type"] == "approval/decided"]
    assert decided == ["rejected"]
    assert not target.exists()


def _run_in_a_terminal(
    dsh: Dsh, args: list[str], answer: bytes, env: dict[str, str]
) -> tuple[int, str]:
    """``dsh`` with a pseudo-terminal as standard input: answer the approval prompt once it
    appears on standard error; returns the exit status and standard error."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [str(DSH), *args],
        cwd=dsh.cwd,
        env=dsh.env(env),
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(slave)
    assert process.stderr is not None
    stderr = bytearray()
    prompted = threading.Event()

    def read_stderr() -> None:
        assert process.stderr is not None
        for chunk in iter(lambda: process.stderr.read1(4096), b""):  # type: ignore[union-attr]
            stderr.extend(chunk)
            if b"answer: a allow once" in stderr:
                prompted.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert prompted.wait(TIMEOUT), bytes(stderr).decode()
        os.write(master, answer)
        process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    reader.join(TIMEOUT)
    return process.returncode, bytes(stderr).decode()


@pytest.mark.parametrize(("answer", "outcome"), [(b"a\n", "allowed-once"), (b"r\n", "rejected")])
def test_run_in_a_terminal_shows_the_command_and_justification_and_asks(
    dsh: Dsh, tmp_path: Path, answer: bytes, outcome: str
) -> None:
    target = tmp_path / "outside.txt"
    with tool_call_server.ToolCallServer([_escalation(target), "Done."]) as server:
        dsh.config(_provider_config(server.base_url))
        code, stderr = _run_in_a_terminal(
            dsh,
            ["run", "--model", "local:test-model", "write it"],
            answer,
            {"LOCAL_LLM_KEY": SECRET},
        )
    assert code == 0, stderr
    assert f"command: echo escalated > {target}" in stderr
    assert "reason: escalate sandbox to danger-full-access: The test asks for a file" in stderr
    records = _records_of_only_session(dsh)
    assert [r["data"]["outcome"] for r in records if r["type"] == "approval/decided"] == [outcome]
    assert target.exists() == (outcome == "allowed-once")


def test_a_resume_flag_replaces_only_its_own_knob_and_a_refused_run_logs_none(dsh: Dsh) -> None:
    """The session keeps its own knobs: ``--approval`` on resume leaves the logged mode alone
    even when the config now says another one, and a run refused for want of bubblewrap
    writes no knob at all."""
    canned = '[providers.canned]\nkind = "scripted"\nreplies = ["Hi."]\n'
    dsh.config(canned)
    first = dsh.ok("run", "--model", "canned:any", "--sandbox", "read-only", "one")
    session_id = first.stderr.decode().split("session ", 1)[1].split()[0]
    dsh.config('[sandbox]\nmode = "danger-full-access"\n' + canned)
    dsh.ok("run", "--resume", session_id, "--approval", "never", "two")
    knobs = [
        (r["type"], r["data"])
        for r in _records_of_only_session(dsh)
        if r["type"] in ("permission/preset", "sandbox/mode", "approval/policy")
    ]
    assert knobs == [
        ("permission/preset", {"preset": "read-only"}),
        ("sandbox/mode", {"mode": "read-only"}),
        ("approval/policy", {"policy": "ask"}),
        ("approval/policy", {"policy": "never"}),
    ]
    dsh.config(NO_BWRAP + canned)
    count = len(_records_of_only_session(dsh))
    line = one_error_line(dsh("run", "--resume", session_id, "--sandbox", "workspace-write", "x"))
    assert "sandbox cannot run here" in line
    after = _records_of_only_session(dsh)
    assert not [r for r in after[count:] if r["type"] == "sandbox/mode"]
