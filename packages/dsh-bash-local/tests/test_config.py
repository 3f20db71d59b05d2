"""LocalBashConfig: defaults, and invalid values refused at construction naming the field."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dsh_bash_local import LocalBashConfig, LocalBashExecutor
from dsh_shell import ShellExecRequest, ShellValueError


def test_defaults_match_the_documented_limits() -> None:
    config = LocalBashConfig()
    assert (config.timeout, config.max_timeout, config.grace) == (120.0, 600.0, 3.0)
    assert (config.max_output_bytes, config.max_spill_bytes) == (64_000, 64 * 1024 * 1024)
    assert (config.cwd, config.spill_dir, config.shell) == (None, None, "bash")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timeout", 0),
        ("timeout", -1.0),
        ("timeout", math.nan),
        ("max_timeout", math.inf),
        ("max_output_bytes", 0),
        ("max_output_bytes", 1.5),
        ("max_spill_bytes", -1),
        ("grace", 0),
        ("grace", math.inf),
        ("grace", 10**7),
        ("shell", ""),
    ],
)
def test_an_invalid_value_is_refused_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ShellValueError) as info:
        LocalBashConfig(**{field: value})  # type: ignore[arg-type]
    assert info.value.name == f"config.{field}"


def test_a_default_timeout_above_the_cap_is_refused() -> None:
    with pytest.raises(ShellValueError, match=r"config\.timeout"):
        LocalBashConfig(timeout=700, max_timeout=600)


def test_zero_spill_bytes_is_allowed_and_disables_spill() -> None:
    assert LocalBashConfig(max_spill_bytes=0).max_spill_bytes == 0


def test_relative_paths_are_made_absolute() -> None:
    config = LocalBashConfig(cwd=Path("work"), spill_dir=Path("spill"))
    assert config.cwd == Path.cwd() / "work"
    assert config.spill_dir == Path.cwd() / "spill"


def test_resolve_uses_the_configured_cwd_timeout_and_output_cap(tmp_path: Path) -> None:
    executor = LocalBashExecutor(LocalBashConfig(cwd=tmp_path, timeout=5, max_output_bytes=77))
    spec = executor.resolve(ShellExecRequest("true"))
    assert (spec.workdir, spec.timeout, spec.stdout_max_bytes) == (tmp_path, 5, 77)


def test_resolve_clamps_a_timeout_to_the_configured_cap() -> None:
    executor = LocalBashExecutor(LocalBashConfig(timeout=5, max_timeout=10))
    assert executor.resolve(ShellExecRequest("true", timeout=3600)).timeout == 10


def test_resolve_resolves_a_relative_workdir_against_the_configured_cwd(tmp_path: Path) -> None:
    executor = LocalBashExecutor(LocalBashConfig(cwd=tmp_path))
    assert executor.resolve(ShellExecRequest("true", workdir="sub")).workdir == tmp_path / "sub"
