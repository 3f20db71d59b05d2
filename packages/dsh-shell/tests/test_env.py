"""The managed namespace, overlay validation, and the child environment order."""

from __future__ import annotations

from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_shell import (
    DSH_ENV_PREFIX,
    DshEnvironmentError,
    ReservedEnvKeyError,
    ShellEnvContributor,
    compose_child_environment,
    is_dsh_key,
    scrub_parent_environment,
    validate_dsh_environment,
    validate_ordinary_env,
)


def test_prefix_is_dsh_underscore() -> None:
    assert DSH_ENV_PREFIX == "DSH_"


@pytest.mark.parametrize("name", ["DSH_HOME", "dsh_home", "Dsh_X"])
def test_namespace_membership_is_case_insensitive(name: str) -> None:
    assert is_dsh_key(name)


def test_names_outside_the_namespace_are_not_managed() -> None:
    assert not is_dsh_key("DSHX")


def test_managed_overlay_is_copied_immutably() -> None:
    source = {"DSH_SHELL": "1"}
    overlay = validate_dsh_environment(source)
    source["DSH_SHELL"] = "2"
    assert overlay == {"DSH_SHELL": "1"}
    with pytest.raises(TypeError):
        overlay["DSH_X"] = "y"  # type: ignore[index]


@pytest.mark.parametrize("key", ["HOME", "dsh_shell", "DSH_", "DSH_a-b"])
def test_managed_overlay_refuses_a_malformed_key_naming_it(key: str) -> None:
    with pytest.raises(DshEnvironmentError) as info:
        validate_dsh_environment({key: "1"})
    assert info.value.key == key


def test_managed_overlay_refuses_non_string_values() -> None:
    with pytest.raises(DshEnvironmentError, match="DSH_SHELL"):
        validate_dsh_environment({"DSH_SHELL": 1})  # type: ignore[dict-item]


@pytest.mark.parametrize("key", ["DSH_SESSION_ID", "dsh_session_id", "Dsh_Home"])
def test_ordinary_env_refuses_a_managed_key_in_any_case(key: str) -> None:
    with pytest.raises(ReservedEnvKeyError) as info:
        validate_ordinary_env({key: "x"})
    assert info.value.key == key
    assert key in str(info.value)


def test_scrub_drops_managed_credential_and_startup_names_but_keeps_path() -> None:
    parent = {
        "PATH": "/bin",
        "HOME": "/h",
        "DSH_STALE_PARENT": "stale",
        "dsh_lower": "stale",
        "OPENAI_API_KEY": "k",
        "GH_TOKEN": "t",
        "DB_PASSWORD": "p",
        "MY_SECRET": "s",
        "BASH_ENV": "/x",
        "ENV": "/y",
    }
    assert scrub_parent_environment(parent) == {"PATH": "/bin", "HOME": "/h"}


CREDENTIAL_NAMES = [
    "MY_PASSWD",
    "passwd_file_contents",
    "PGPASSWORD",
    "PGPASSFILE",
    "MYSQL_PWD",
    "GITHUB_PAT",
    "NPM_AUTH",
    "AWS_CREDENTIALS",
    "google_application_credential",
    "COOKIE",
    "SESSION_COOKIE",
    "DATABASE_URL",
    "database_url",
]


@pytest.mark.parametrize("name", CREDENTIAL_NAMES)
def test_scrub_drops_credential_names_beyond_key_password_secret_token(name: str) -> None:
    assert scrub_parent_environment({name: "secret", "PATH": "/bin"}) == {"PATH": "/bin"}


@pytest.mark.parametrize("name", ["PATHNAME", "PATTERN", "AUTHOR", "MY_PATH", "PWD", "OLDPWD"])
def test_scrub_keeps_names_that_only_resemble_a_credential_suffix(name: str) -> None:
    assert scrub_parent_environment({name: "v"}) == {name: "v"}


@pytest.mark.parametrize(
    "name", ["BASH_FUNC_echo%%", "BASH_FUNC_ls()", "SHELLOPTS", "BASHOPTS", "bashopts"]
)
def test_scrub_drops_exported_functions_and_shell_options(name: str) -> None:
    assert scrub_parent_environment({name: "() { printf hacked; }"}) == {}


@pytest.mark.parametrize("name", ["http_proxy", "HTTPS_PROXY", "all_proxy", "Ftp_Proxy"])
@pytest.mark.parametrize(
    "value", ["http://user:pw@proxy:3128", "user:pw@proxy:3128", "socks5h://token@proxy"]
)
def test_scrub_drops_a_proxy_carrying_credentials(name: str, value: str) -> None:
    assert scrub_parent_environment({name: value}) == {}


@pytest.mark.parametrize("name", ["http_proxy", "HTTPS_PROXY", "no_proxy", "ALL_PROXY"])
@pytest.mark.parametrize("value", ["http://proxy:3128", "proxy:3128", "localhost,.corp", ""])
def test_scrub_keeps_a_proxy_without_credentials(name: str, value: str) -> None:
    assert scrub_parent_environment({name: value}) == {name: value}


def test_an_unrelated_value_with_an_at_sign_is_kept() -> None:
    parent = {"EMAIL": "a:b@example.com", "GIT_AUTHOR_EMAIL": "me@example.com"}
    assert scrub_parent_environment(parent) == parent


def test_child_environment_layers_in_order_with_dsh_env_last() -> None:
    parent = {"PATH": "/bin", "TERM": "xterm-256color", "DSH_SESSION_ID": "stale"}
    child = compose_child_environment(
        parent,
        env={"PAGER": "less", "MY_TOKEN": "explicit"},
        dsh_env={"DSH_SESSION_ID": "current"},
    )
    assert child == {
        "PATH": "/bin",
        "TERM": "dumb",
        "PAGER": "less",
        "GIT_PAGER": "cat",
        "NO_COLOR": "1",
        "MY_TOKEN": "explicit",
        "DSH_SESSION_ID": "current",
    }


def test_child_environment_never_takes_a_managed_name_from_env() -> None:
    child = compose_child_environment({}, env={"dsh_x": "evil"}, dsh_env={"DSH_X": "good"})
    assert child["DSH_X"] == "good"
    assert "dsh_x" not in child


def test_child_environment_does_not_modify_the_parent() -> None:
    parent = {"DSH_X": "1", "PATH": "/bin"}
    compose_child_environment(parent, env={"A": "b"}, dsh_env={"DSH_Y": "2"})
    assert parent == {"DSH_X": "1", "PATH": "/bin"}


def test_a_plain_class_satisfies_the_contributor_protocol() -> None:
    class Contributor:
        name = "example"
        keys: ClassVar[dict[str, str]] = {"DSH_EXAMPLE": "an example fact"}

        def resolve(self, execution: object) -> dict[str, str]:
            return {"DSH_EXAMPLE": "1"}

    assert isinstance(Contributor(), ShellEnvContributor)


@given(
    prefix=st.tuples(*(st.sampled_from([c.lower(), c.upper()]) for c in "DSH_")).map("".join),
    suffix=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcxyz0123456789_", max_size=12),
)
def test_any_casing_of_the_managed_prefix_is_refused_in_env(prefix: str, suffix: str) -> None:
    with pytest.raises(ReservedEnvKeyError):
        validate_ordinary_env({prefix + suffix: "x"})
