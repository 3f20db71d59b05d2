"""Requests, resolved specs and the shared resolve helper."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dsh_shell import (
    CollectedOutput,
    ReservedEnvKeyError,
    ShellExecRequest,
    ShellExecSpec,
    ShellRunResult,
    ShellValueError,
    resolve_request,
)


def _resolve(request: ShellExecRequest, workdir: Path | None = None) -> ShellExecSpec:
    return resolve_request(
        request,
        default_workdir=workdir,
        default_timeout=120,
        max_timeout=600,
        default_stdout_max_bytes=64_000,
    )


def test_resolve_fills_every_default(tmp_path: Path) -> None:
    spec = _resolve(ShellExecRequest("echo hi"), tmp_path)
    assert (spec.workdir, spec.timeout, spec.stdout_max_bytes) == (tmp_path, 120, 64_000)


def test_resolve_defaults_the_workdir_to_the_process_cwd() -> None:
    assert _resolve(ShellExecRequest("true")).workdir == Path.cwd()


def test_resolve_makes_a_relative_workdir_absolute(tmp_path: Path) -> None:
    assert _resolve(ShellExecRequest("true", workdir="sub"), tmp_path).workdir == tmp_path / "sub"


def test_resolve_omits_stdin_env_and_dsh_env_when_absent(tmp_path: Path) -> None:
    spec = _resolve(ShellExecRequest("true"), tmp_path)
    assert (spec.stdin, spec.env, spec.dsh_env) == (None, None, None)


def test_resolve_carries_stdin_env_and_dsh_env(tmp_path: Path) -> None:
    request = ShellExecRequest("cat", stdin="x", env={"A": "1"}, dsh_env={"DSH_SHELL": "1"})
    spec = _resolve(request, tmp_path)
    assert (spec.stdin, dict(spec.env or {}), dict(spec.dsh_env or {})) == (
        "x",
        {"A": "1"},
        {"DSH_SHELL": "1"},
    )


def test_resolve_clamps_a_large_timeout_to_the_cap(tmp_path: Path) -> None:
    assert _resolve(ShellExecRequest("true", timeout=10_000), tmp_path).timeout == 600


@pytest.mark.parametrize("timeout", [0, -1, math.inf, math.nan])
def test_resolve_refuses_a_bad_timeout_naming_the_field(timeout: float) -> None:
    with pytest.raises(ShellValueError) as info:
        _resolve(ShellExecRequest("true", timeout=timeout))
    assert info.value.name == "request.timeout"


@pytest.mark.parametrize("cap", [0, -5, 1.5])
def test_resolve_refuses_a_bad_stdout_cap_naming_the_field(cap: int) -> None:
    with pytest.raises(ShellValueError) as info:
        _resolve(ShellExecRequest("true", stdout_max_bytes=cap))
    assert info.value.name == "request.stdout_max_bytes"


def test_resolve_refuses_an_env_key_in_the_managed_namespace() -> None:
    with pytest.raises(ReservedEnvKeyError) as info:
        _resolve(ShellExecRequest("true", env={"dsh_session_id": "x"}))
    assert info.value.key == "dsh_session_id"


def test_a_spec_cannot_be_built_with_a_managed_env_key(tmp_path: Path) -> None:
    with pytest.raises(ReservedEnvKeyError):
        ShellExecSpec("true", tmp_path, 1.0, 10, env={"DSH_X": "1"})


def test_a_spec_needs_an_absolute_workdir() -> None:
    with pytest.raises(ShellValueError, match="workdir"):
        ShellExecSpec("true", Path("relative"), 1.0, 10)


def test_a_result_cannot_be_both_timed_out_and_aborted() -> None:
    with pytest.raises(ValueError, match="first cause wins"):
        ShellRunResult(
            None, "SIGTERM", True, True, 1.0, CollectedOutput(""), CollectedOutput(""), 0
        )
