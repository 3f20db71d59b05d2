"""resolve_dsh_home: every precedence rule and edge case of the one home rule."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_paths import (
    DSH_HOME_DIR_NAME,
    DSH_HOME_ENV,
    DshHomeError,
    dsh_cache_dir,
    dsh_home_display,
    dsh_home_path,
    expand_home,
    resolve_dsh_home,
)

HOME = "/home/tester"


def test_default_is_dot_dsh_under_the_user_home() -> None:
    assert resolve_dsh_home(env={"HOME": HOME}) == Path(HOME, ".dsh")


def test_default_uses_os_environ_when_env_is_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DSH_HOME_ENV, raising=False)
    monkeypatch.setenv("HOME", "/home/from-os")
    assert resolve_dsh_home() == Path("/home/from-os/.dsh")


def test_env_value_is_used_when_not_blank() -> None:
    assert resolve_dsh_home(env={DSH_HOME_ENV: "/srv/dsh", "HOME": HOME}) == Path("/srv/dsh")


def test_os_environ_dsh_home_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DSH_HOME_ENV, "/opt/dsh-home")
    assert resolve_dsh_home() == Path("/opt/dsh-home")


@pytest.mark.parametrize("blank", ["", " ", "\t\n  "])
def test_blank_env_value_counts_as_unset(blank: str) -> None:
    assert resolve_dsh_home(env={DSH_HOME_ENV: blank, "HOME": HOME}) == Path(HOME, ".dsh")


def test_non_blank_env_value_is_not_trimmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_dsh_home(env={DSH_HOME_ENV: " x "}) == tmp_path / " x "


def test_explicit_value_wins_over_env() -> None:
    env = {DSH_HOME_ENV: "/srv/dsh", "HOME": HOME}
    assert resolve_dsh_home("/explicit", env) == Path("/explicit")


def test_explicit_empty_string_is_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_dsh_home("", {DSH_HOME_ENV: "/srv/dsh"}) == tmp_path


def test_explicit_path_object_is_accepted() -> None:
    assert resolve_dsh_home(Path("/a/b"), {}) == Path("/a/b")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("~", HOME), ("~/x", f"{HOME}/x"), ("~/x/../y", f"{HOME}/y")],
)
def test_tilde_is_expanded_for_explicit_and_env_values(value: str, expected: str) -> None:
    assert resolve_dsh_home(value, {"HOME": HOME}) == Path(expected)
    assert resolve_dsh_home(None, {DSH_HOME_ENV: value, "HOME": HOME}) == Path(expected)


def test_relative_value_resolves_against_the_cwd_at_call_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    first = resolve_dsh_home("home", {})
    monkeypatch.chdir(tmp_path)
    assert first == tmp_path / "a" / "home"
    assert resolve_dsh_home("home", {}) == tmp_path / "home"


def test_result_is_normalized_without_following_symlinks(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    resolved = resolve_dsh_home(str(tmp_path / "link" / "." / "sub" / ".."), {})
    assert resolved == tmp_path / "link"
    assert resolved.is_absolute()


@pytest.mark.parametrize("value", ["~user/x", "$HOME/x", "a~"])
def test_only_plain_tilde_forms_expand(value: str) -> None:
    assert expand_home(value, {"HOME": HOME}) == value


def test_nul_character_is_refused_with_its_source() -> None:
    with pytest.raises(DshHomeError, match=r"\$DSH_HOME.*NUL") as info:
        resolve_dsh_home(None, {DSH_HOME_ENV: "/a\x00b"})
    assert info.value.source == "$DSH_HOME"
    with pytest.raises(DshHomeError, match="explicit"):
        resolve_dsh_home("/a\x00b", {})


def test_dsh_home_path_joins_segments() -> None:
    env = {DSH_HOME_ENV: "/srv/dsh"}
    assert dsh_home_path("sessions-plain", "x", env=env) == Path("/srv/dsh/sessions-plain/x")
    assert dsh_home_path(explicit="/e", env=env) == Path("/e")


def test_display_never_reveals_an_absolute_path() -> None:
    env = {"HOME": HOME}
    assert dsh_home_display(Path(HOME, DSH_HOME_DIR_NAME), env) == "~/.dsh"
    assert dsh_home_display(f"{HOME}/.dsh/../.dsh", env) == "~/.dsh"
    assert dsh_home_display("/srv/secret/place", env) == "$DSH_HOME"


def test_cache_dir_is_absolute_and_named_for_dsh() -> None:
    cache = dsh_cache_dir()
    assert cache.is_absolute()
    assert cache.name == "dsh"
    assert os.fspath(cache)
