"""Rendering results to model-facing text with the exact markers, and parsing them back."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from dsh_shell import (
    CollectedOutput,
    ProcessRead,
    ShellRunResult,
    merge_streams,
    parse_exit_status,
    render_process_read,
    render_result,
)


def _result(
    stdout: str = "",
    stderr: str = "",
    *,
    exit_code: int | None = 0,
    signal: str | None = None,
    timed_out: bool = False,
    timeout: float = 0.1,
    stdout_truncated: bool = False,
    spill: Path | None = None,
) -> ShellRunResult:
    return ShellRunResult(
        exit_code=exit_code,
        signal=signal,
        timed_out=timed_out,
        aborted=False,
        timeout=timeout,
        stdout=CollectedOutput(stdout, stdout_truncated, spill),
        stderr=CollectedOutput(stderr),
        duration=0.0,
    )


def test_plain_stdout_is_rendered_as_is() -> None:
    assert render_result(_result("hello\n")) == "hello\n"


def test_empty_streams_render_as_no_output() -> None:
    assert render_result(_result()) == "(no output)"


def test_stderr_follows_stdout_under_its_header() -> None:
    assert render_result(_result("out\n", "err\n")) == "out\n[stderr]\nerr\n"


def test_nonzero_exit_adds_the_exit_code_marker() -> None:
    assert render_result(_result("failing", exit_code=3)) == "failing\n[exit code: 3]"


def test_timeout_and_signal_markers_follow_in_order() -> None:
    result = _result(exit_code=None, signal="SIGTERM", timed_out=True, timeout=0.1)
    assert (
        render_result(result) == "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]"
    )


def test_timeout_is_reported_even_when_the_command_exited_zero() -> None:
    assert render_result(_result("x\n", timed_out=True, timeout=2)) == "x\n[timed out after 2000ms]"


def test_truncated_stream_names_its_spill_file() -> None:
    text = render_result(_result("tail", stdout_truncated=True, spill=Path("/tmp/s.log")))
    assert text == "tail\n[output truncated; full output: /tmp/s.log]"


def test_truncated_stream_without_spill_says_unavailable() -> None:
    text = render_result(_result("tail", stdout_truncated=True))
    assert text == "tail\n[output truncated; full output: (unavailable)]"


def test_stderr_only_merge_has_no_leading_newline() -> None:
    assert merge_streams("", "err\n") == "[stderr]\nerr\n"


def test_merge_adds_a_newline_only_when_stdout_lacks_one() -> None:
    assert merge_streams("out", "err") == "out\n[stderr]\nerr"


def test_lossy_read_appends_the_dropped_output_notice_with_paths() -> None:
    read = ProcessRead("abc", True, Path("/s/out.log"), Path("/s/err.log"))
    assert render_process_read(read) == (
        "abc\n[some output was dropped from memory; full output: /s/out.log, /s/err.log]"
    )


def test_lossy_read_without_spill_says_unavailable() -> None:
    read = ProcessRead("abc\n", True)
    assert render_process_read(read) == (
        "abc\n[some output was dropped from memory; full output: (unavailable)]"
    )


def test_parse_reads_the_exit_code_marker() -> None:
    status = parse_exit_status("failing\n[exit code: 3]")
    assert (status.body, status.exit_code, status.signal) == ("failing", 3, None)


def test_parse_reads_the_signal_marker_and_keeps_the_timeout_marker_in_the_body() -> None:
    status = parse_exit_status("(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]")
    assert status.body == "(no output)\n[timed out after 100ms]"
    assert (status.exit_code, status.signal) == (None, "SIGTERM")


def test_parse_ignores_a_marker_without_a_leading_newline() -> None:
    status = parse_exit_status("[exit code: 5]")
    assert (status.body, status.exit_code) == ("[exit code: 5]", 0)


def test_parse_ignores_a_marker_that_does_not_end_the_text() -> None:
    status = parse_exit_status("x\n[exit code: 5]\nmore")
    assert status.exit_code == 0


@given(
    stdout=st.text(max_size=30),
    stderr=st.text(max_size=30),
    exit_code=st.integers(min_value=0, max_value=255),
)
def test_parse_recovers_the_exit_code_of_any_rendered_result(
    stdout: str, stderr: str, exit_code: int
) -> None:
    assert parse_exit_status(
        render_result(_result(stdout, stderr, exit_code=exit_code))
    ).exit_code == (exit_code)


@given(signal=st.sampled_from(["SIGTERM", "SIGKILL", "SIGINT"]), stdout=st.text(max_size=30))
def test_parse_recovers_the_signal_of_any_rendered_result(signal: str, stdout: str) -> None:
    status = parse_exit_status(render_result(_result(stdout, exit_code=None, signal=signal)))
    assert (status.exit_code, status.signal) == (None, signal)
