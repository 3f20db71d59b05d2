"""How ``dsh run`` ends and what it shows on the way (issue 33, 3.4, 3.5, 3.10 and 4): a reader
that closes the pipe early, Ctrl-C and SIGTERM mid-stream, a stream cut off and retried, and the
usage line after each turn (with ``sessions show`` and ``sessions list --json`` totals).

Every case runs the installed ``dsh`` console script in a real process (a fresh ``DSH_HOME``)
against a tiny OpenAI-compatible server on 127.0.0.1 started by the test. Every wait is on an
event with a bound (a safety net, not a speed bar).
"""

from __future__ import annotations

import json
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

CUT, HANG, GATE = "cut", "hang", "gate"
"""Script markers of conftest's server: drop the connection; stall until released; wait for
the gate."""


@pytest.fixture
def server(model_server: LoopbackModel) -> LoopbackModel:
    """The model of conftest's ``model_server`` (the n-th request gets the n-th script)."""
    return model_server


def _ending(stderr: str) -> tuple[str, Path]:
    """The session id and log path the run printed, and that it said how to resume."""
    (session,) = re.findall(r"^session (\S+)$", stderr, re.MULTILINE)
    (log,) = re.findall(r"^log: (.+)$", stderr, re.MULTILINE)
    assert f"resume: dsh run --resume {session} PROMPT" in stderr, stderr
    return session, Path(log)


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _turn_ends(log: Path) -> list[dict[str, Any]]:
    return [e for e in _events(log) if e.get("type") == "turn/end"]


# -- 3.5: a reader that closes the pipe early ----------------------------------------------------


def test_a_closed_stdout_never_stops_the_turn_or_its_log(dsh: Dsh, server: LoopbackModel) -> None:
    """``dsh run … | head -c 40``: the reader has its 40 bytes and goes; the rest of the answer
    (more than a pipe holds) is discarded, the turn completes and logs ``turn/end``, dsh exits
    0 quietly."""
    dsh.configure(server)
    long_answer = "word " * 40_000  # 200 KB: the write blocks until the reader goes
    server.scripts = [server.bash_call("echo from-the-tool"), server.text_answer(long_answer)]
    process = dsh.popen("run", "go", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    assert process.stderr is not None
    head = process.stdout.read(40)  # the final answer's start: into a pipe, nothing else
    process.stdout.close()  # as `head -c 40` exits
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(TIMEOUT) == 0, stderr
    assert head == b"word " * 8, head
    assert "Broken pipe" not in stderr
    assert "Traceback" not in stderr
    assert "error" not in stderr
    _, log = _ending(stderr)
    (end,) = _turn_ends(log)
    assert end["data"]["reason"]["kind"] == "completed"


def test_into_a_pipe_stdout_holds_the_final_answer_alone(dsh: Dsh, server: LoopbackModel) -> None:
    """A script reads the answer: the text of a step that called tools, the calls and their
    output go to standard error."""
    dsh.configure(server)
    server.scripts = [server.bash_call("echo from-the-tool"), server.text_answer("The end.")]
    done = dsh("run", "go")
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert done.stdout == b"The end.\n"
    assert "running it" in stderr
    assert "⏺ bash: echo from-the-tool" in stderr
    assert "from-the-tool" in stderr


def test_sessions_list_into_a_closed_pipe_is_quiet(dsh: Dsh, server: LoopbackModel) -> None:
    """``dsh sessions list | head -1`` (and ``--json``, ``show``): no ``Broken pipe`` error."""
    dsh.configure(server)
    server.scripts = [server.text_answer("hello " * 2000)]
    for _ in range(3):
        assert dsh("run", "hi").returncode == 0
    (session,) = {_ending(dsh("run", "hi").stderr.decode())[0]}
    for args in (
        ["sessions", "list"],
        ["sessions", "list", "--json"],
        ["sessions", "show", session],
        ["sessions", "show", "--raw", session],
    ):
        pipeline = subprocess.run(
            ["bash", "-o", "pipefail", "-c", f'"{DSH}" "$@" | head -c 1 >/dev/null', "-", *args],
            cwd=dsh.cwd,
            env=dsh.env(),
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
        assert pipeline.returncode == 0, (args, pipeline.stderr)
        assert pipeline.stderr == b"", (args, pipeline.stderr)


# -- 3.10: Ctrl-C and SIGTERM print how the session ends -----------------------------------------


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_stream_still_prints_the_session_and_its_log(
    dsh: Dsh, server: LoopbackModel, signum: int, status: int
) -> None:
    dsh.configure(server)
    server.scripts = [[server.chunk({"role": "assistant", "content": "partial answer"}), HANG]]
    process = dsh.popen("run", "go", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert server.streaming.wait(TIMEOUT), "the model was never asked"
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(TIMEOUT)
    text = stderr.decode()
    assert process.returncode == status, text
    assert "Traceback" not in text
    _, log = _ending(text)
    (end,) = _turn_ends(log)
    assert end["data"]["reason"]["kind"] == "aborted"


# -- 3.4: a stream cut off mid-answer and retried ------------------------------------------------


def test_a_cut_off_attempt_never_reaches_a_pipe(dsh: Dsh, server: LoopbackModel) -> None:
    """Into a pipe, stdout holds the retried answer alone; stderr says an attempt was dropped."""
    dsh.configure(server)
    cut = [
        server.chunk({"role": "assistant", "content": ""}),
        server.chunk({"content": "ABANDONED half"}),
        CUT,
    ]
    server.scripts = [cut, server.text_answer("The whole ", "answer.")]
    done = dsh("run", "go")
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, stderr
    assert server.answered == 2
    assert stdout == "The whole answer.\n", stdout
    assert "ABANDONED" not in stdout
    assert "an answer cut off after 14 characters was dropped; retrying" in stderr, stderr
    assert "retrying in" in stderr


# -- 4: usage shown ------------------------------------------------------------------------------

USAGE = {
    "prompt_tokens": 1200,
    "completion_tokens": 30,
    "prompt_tokens_details": {"cached_tokens": 1000},
    "completion_tokens_details": {"reasoning_tokens": 10},
}
PRICED = (
    "context_window = 8192\n"
    '[models."local:test-model"]\nprices = { input = 1.0, cached_input = 0.1, output = 2.0 }\n'
)


def test_each_turn_prints_its_usage_and_cost(dsh: Dsh, server: LoopbackModel) -> None:
    """200 fresh at $1/M + 1000 cached at $0.1/M + 30 out at $2/M = $0.00036."""
    dsh.configure(server, PRICED)
    server.scripts = [server.text_answer("Hi.", usage=USAGE)]
    done = dsh("run", "go")
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    line = (
        "tokens in 1,200 (cached 1,000), out 30 (reasoning 10)"
        " · context 1,230 of 8,192 (15%) · cost $0.0004"
    )
    assert line in stderr.splitlines(), stderr
    session, _ = _ending(stderr)

    show = dsh("sessions", "show", session)
    assert show.returncode == 0, show.stderr
    last = show.stdout.decode().rstrip("\n").splitlines()[-1]
    assert last == (
        "totals: tokens in 1,200 (cached 1,000), out 30 (reasoning 10) · cost $0.0004"
    ), last

    listed = dsh("sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["totals"] == {
        "calls": 1,
        "unreported": 0,
        "input_tokens": 200,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 0,
        "output_tokens": 30,
        "reasoning_tokens": 10,
        "cost_usd": 0.00036,
    }


def test_an_unpriced_model_shows_tokens_without_a_cost(dsh: Dsh, server: LoopbackModel) -> None:
    dsh.configure(server, PRICED)
    server.scripts = [server.text_answer("Hi.", usage=USAGE)]
    done = dsh("run", "--model", "local:other-model", "go")
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    (line,) = [x for x in stderr.splitlines() if x.startswith("tokens in ")]
    assert line.startswith("tokens in 1,200 (cached 1,000), out 30 (reasoning 10)"), line
    assert "cost" not in line
    listed = json.loads(dsh("sessions", "list", "--json").stdout)
    assert listed[0]["totals"]["cost_usd"] is None
