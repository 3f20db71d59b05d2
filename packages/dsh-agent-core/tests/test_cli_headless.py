"""``dsh run`` in scripts and CI (issue 34 §2): the prompt from standard input, an empty prompt
refused, ``--output json`` and ``stream-json``, ``--max-steps``, and the documented exit status.

Every case runs the installed ``dsh`` console script in a real process with real pipes (a fresh
``DSH_HOME``) against conftest's scripted OpenAI-compatible server on 127.0.0.1. Every wait is on
an event with a bound (a safety net, not a speed bar).
"""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # conftest's classes, for the annotations only
    from conftest import Dsh, LoopbackModel

DSH = Path(sys.executable).parent / "dsh"
TIMEOUT = 120.0
"""Seconds one wait may take: a safety net against a hang."""


def _feed(dsh: Dsh, stdin: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``dsh *args`` with ``stdin`` piped in."""
    return subprocess.run(
        [str(DSH), *args],
        input=stdin,
        cwd=dsh.cwd,
        env=dsh.env(),
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )


def _user_prompts(server: LoopbackModel) -> list[str]:
    """The user messages of the last chat request, as text."""
    messages = server.bodies[-1]["messages"]
    return [m["content"] for m in messages if m["role"] == "user" and isinstance(m["content"], str)]


def _stored(dsh: Dsh) -> list[dict[str, Any]]:
    listed = dsh("sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows: list[dict[str, Any]] = json.loads(listed.stdout)
    return rows


def _one_line(stderr: bytes) -> str:
    lines = stderr.decode().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# -- the prompt ----------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["run", "-"], ["run"]], ids=["dash", "absent"])
def test_the_prompt_is_read_from_a_piped_standard_input(
    dsh: Dsh, model_server: LoopbackModel, args: list[str]
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("Read it.")]
    done = _feed(dsh, "summarise this: ünïcode\nsecond line\n".encode(), *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"Read it.\n"
    assert any("summarise this: ünïcode\nsecond line" in p for p in _user_prompts(model_server))
    assert not any(p.strip() == "-" for p in _user_prompts(model_server))


@pytest.mark.parametrize(
    ("stdin", "args"),
    [(b"", ["run", ""]), (b"", ["run", " \n\t "]), (b" \n \n", ["run", "-"]), (b"", ["run"])],
    ids=["empty-argument", "blank-argument", "blank-stdin", "empty-stdin"],
)
def test_an_empty_prompt_is_refused_before_any_session_exists(
    dsh: Dsh, model_server: LoopbackModel, stdin: bytes, args: list[str]
) -> None:
    dsh.configure(model_server)
    done = _feed(dsh, stdin, *args)
    assert done.returncode == 2, done.stderr
    assert (
        _one_line(done.stderr) == "dsh: error: the prompt is empty: give the agent something to do"
    )
    assert done.stdout == b""
    assert model_server.answered == 0
    assert _stored(dsh) == []


def test_a_prompt_over_one_mebibyte_on_standard_input_is_refused_naming_the_limit(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    done = _feed(dsh, b"x" * (1024 * 1024 + 1), "run", "-")
    assert done.returncode == 2, done.stderr
    line = _one_line(done.stderr)
    assert "longer than 1048576 bytes (1 MiB)" in line, line
    assert model_server.answered == 0
    assert _stored(dsh) == []


def test_a_prompt_of_exactly_one_mebibyte_is_accepted(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("Long.")]
    done = _feed(dsh, b"y" * (1024 * 1024), "run")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"Long.\n"


def test_no_prompt_with_a_terminal_on_standard_input_is_a_usage_error(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    master, slave = pty.openpty()
    try:
        process = dsh.popen("run", stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        os.close(slave)
        os.close(master)
    assert process.returncode == 2, stderr
    assert "missing PROMPT" in stderr.decode()
    assert model_server.answered == 0
    assert _stored(dsh) == []


# -- --output json and stream-json ---------------------------------------------------------------

ESCAPES = "a\x1b[2J\x9b\u202e end"
"""Model-written text holding controls: JSON output keeps them as escapes, never raw C0."""


def test_output_json_is_one_object_with_the_answer_reason_usage_and_log(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 7,
        "prompt_tokens_details": {"cached_tokens": 100},
    }
    model_server.scripts = [
        model_server.bash_call("echo tool-ran"),
        model_server.text_answer("The answer: ", ESCAPES, usage=usage),
    ]
    done = dsh("run", "--output", "json", "go")
    assert done.returncode == 0, done.stderr
    assert b"\x1b" not in done.stdout
    result = json.loads(done.stdout)  # the whole of standard output is one object
    assert set(result) == {"type", "session_id", "answer", "reason", "usage", "log", "exit_code"}
    assert result["type"] == "result"
    assert result["answer"] == "The answer: " + ESCAPES
    assert result["reason"] == {"kind": "completed"}
    assert result["exit_code"] == 0
    assert result["usage"]["calls"] == 2
    assert result["usage"]["input_tokens"] == 20
    assert result["usage"]["cache_read_tokens"] == 100
    assert result["usage"]["output_tokens"] == 7
    assert result["usage"]["cost_usd"] is None
    assert Path(result["log"]).is_file()
    (row,) = _stored(dsh)
    assert row["session_id"] == result["session_id"]
    assert row["session_path"] == result["log"]
    stderr = done.stderr.decode()
    assert "bash: echo tool-ran" in stderr  # the person watching still sees the turn
    assert f"session {result['session_id']}" in stderr


def test_output_stream_json_is_the_logged_events_line_by_line_then_the_result(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [
        model_server.bash_call("echo tool-ran"),
        model_server.text_answer("Done ", ESCAPES),
    ]
    done = dsh("run", "--output", "stream-json", "go")
    assert done.returncode == 0, done.stderr
    assert b"\x1b" not in done.stdout
    lines = done.stdout.splitlines()
    *events, result = [json.loads(line) for line in lines]
    assert result["type"] == "result"
    assert result["answer"] == "Done " + ESCAPES
    assert result["exit_code"] == 0
    log = Path(result["log"]).read_bytes().splitlines()
    streamed = lines[:-1]
    assert streamed == log[-len(streamed) :]  # byte for byte what the log wrote, in order
    assert events[0]["type"] == "turn/start"
    assert events[-1]["type"] == "turn/end"
    assert [e["seq"] for e in events] == list(range(events[0]["seq"], events[-1]["seq"] + 1))
    kinds = {e["type"] for e in events}
    assert {"assistant/chunk", "tool/call", "tool/result", "assistant/message"} <= kinds


def test_stream_json_lines_arrive_while_the_turn_runs(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    """A reader sees the first step's events before the model has answered the second."""
    dsh.configure(model_server)
    model_server.scripts = [
        model_server.bash_call("echo first"),
        ["gate", *model_server.text_answer("second")],
    ]
    process = dsh.popen(
        "run", "--output", "stream-json", "go", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        seen: list[str] = []
        while "tool/result" not in seen:
            line = process.stdout.readline()
            assert line, "standard output ended before the tool's result was streamed"
            seen.append(json.loads(line)["type"])
        assert "result" not in seen
        model_server.gate.set()
        rest = [json.loads(line)["type"] for line in process.stdout.read().splitlines()]
        assert rest[-1] == "result"
        assert process.wait(TIMEOUT) == 0
    finally:
        model_server.gate.set()
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=TIMEOUT)


@pytest.mark.parametrize("output", ["json", "stream-json"])
def test_json_output_into_a_closed_pipe_is_quiet(
    dsh: Dsh, model_server: LoopbackModel, output: str
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("word " * 4000)]
    pipeline = subprocess.run(
        [
            "bash",
            "-o",
            "pipefail",
            "-c",
            '"$0" "$@" | head -c 1 >/dev/null',
            str(DSH),
            "run",
            "--output",
            output,
            "go",
        ],
        cwd=dsh.cwd,
        env=dsh.env(),
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    stderr = pipeline.stderr.decode()
    assert pipeline.returncode == 0, stderr
    assert "Broken pipe" not in stderr
    assert "Traceback" not in stderr
    assert "error" not in stderr
    (row,) = _stored(dsh)
    ends = [json.loads(x) for x in Path(row["session_path"]).read_text().splitlines()]
    assert ends[-1]["type"] == "turn/end"
    assert ends[-1]["data"]["reason"] == {"kind": "completed"}


# -- --max-steps ---------------------------------------------------------------------------------


def test_max_steps_ends_the_turn_after_that_many_model_calls(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.bash_call("echo again")]  # it never stops on its own
    done = dsh("run", "--max-steps", "2", "--output", "json", "loop")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["reason"]["kind"] == "error"
    assert result["reason"]["error"]["code"] == "MAX_STEPS"
    assert result["exit_code"] == 1
    assert model_server.answered == 2


@pytest.mark.parametrize("steps", ["0", "-1", "many"])
def test_max_steps_must_be_a_positive_integer(
    dsh: Dsh, model_server: LoopbackModel, steps: str
) -> None:
    dsh.configure(model_server)
    done = dsh("run", "--max-steps", steps, "go")
    assert done.returncode == 2, done.stderr
    assert "--max-steps" in done.stderr.decode()
    assert model_server.answered == 0
    assert _stored(dsh) == []


# -- exit status ---------------------------------------------------------------------------------


def test_help_documents_the_exit_status(dsh: Dsh) -> None:
    done = dsh("run", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.decode().split())
    for code in (
        "0 the turn completed",
        "1 the turn ended in an error",
        "2 usage",
        "3 refused",
        "130 cancelled",
    ):
        assert code in text, text


def test_a_sandbox_that_cannot_run_is_exit_3_before_any_session(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    config = dsh.home / "config.toml"
    config.write_text(
        config.read_text().replace(
            'mode = "danger-full-access"\n',
            'mode = "workspace-write"\nbwrap = "/nonexistent/dsh-test/bwrap"\n',
        )
    )
    done = dsh("run", "--output", "json", "go")
    assert done.returncode == 3, done.stderr
    line = _one_line(done.stderr)
    assert line.startswith("dsh: error: the workspace-write sandbox cannot run here"), line
    assert done.stdout == b""
    assert model_server.answered == 0
    assert _stored(dsh) == []


def test_a_turn_a_hook_blocks_is_exit_3(dsh: Dsh, model_server: LoopbackModel) -> None:
    dsh.configure(
        model_server,
        '[hooks]\ndialect = "claude-code"\n\n[[hooks.UserPromptSubmit]]\n'
        'hooks = [{ command = "echo not this prompt >&2; exit 2" }]\n',
    )
    done = dsh("run", "--output", "json", "go")
    assert done.returncode == 3, done.stderr
    result = json.loads(done.stdout)
    assert result["reason"]["kind"] == "blocked"
    assert result["exit_code"] == 3
    assert model_server.answered == 0


def test_an_error_ending_is_exit_1_with_its_reason(dsh: Dsh, model_server: LoopbackModel) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.HttpError(400, {"error": {"message": "bad request"}})]
    done = dsh("run", "--output", "json", "go")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["reason"]["kind"] == "error"
    assert result["exit_code"] == 1


def test_ctrl_c_is_exit_130_and_json_still_says_how_the_turn_ended(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [[model_server.chunk({"role": "assistant", "content": "part"}), "hang"]]
    process = dsh.popen(
        "run", "--output", "json", "go", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert model_server.streaming.wait(TIMEOUT), "the model was never asked"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(TIMEOUT)
    assert process.returncode == 130, stderr
    result = json.loads(stdout)
    assert result["exit_code"] == 130
    assert result["reason"]["kind"] == "aborted"
    assert re.search(rf"^session {result['session_id']}$", stderr.decode(), re.MULTILINE)


# -- a closed standard output, command by command ------------------------------------------------


def test_every_command_into_a_closed_pipe_exits_0_quietly(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    """``dsh … | head -c 1``: the reader had what it wanted; no ``Broken pipe``, exit 0."""
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("answer " * 3000)]
    for _ in range(2):
        assert dsh("run", "a prompt that gives the session some length").returncode == 0
    session = _stored(dsh)[0]["session_id"]
    for args in (
        ["config", "--dump"],
        ["config", "--dump", "--json"],
        ["models"],
        ["models", "--json"],
        ["env"],
        ["sessions", "list"],
        ["sessions", "status", session],
        ["sessions", "show", session[:8]],
        ["sessions", "show", "--raw", session],
        ["sessions", "export", session],
        ["run", "--resume", session, "--output", "json", "go on"],
        ["run", "--resume", session, "--output", "stream-json", "go on"],
        ["run", "--help"],
    ):
        pipeline = subprocess.run(
            ["bash", "-o", "pipefail", "-c", '"$0" "$@" | head -c 1 >/dev/null', str(DSH), *args],
            cwd=dsh.cwd,
            env=dsh.env(),
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
        stderr = pipeline.stderr.decode()
        assert pipeline.returncode == 0, (args, stderr)
        assert "Broken pipe" not in stderr, (args, stderr)
        assert "Traceback" not in stderr, (args, stderr)
        assert "error" not in stderr, (args, stderr)
