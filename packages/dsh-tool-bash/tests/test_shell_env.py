"""ShellEnvRegistry: built-ins, home resolution, declarations, disposal, and collection."""

from __future__ import annotations

import os
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import pytest

from dsh_tool_bash import (
    BUILTIN_CONTRIBUTOR,
    DuplicateContributorError,
    InvalidContributorError,
    InvalidEnvKeyError,
    KeyOwnershipError,
    MissingKeyDescriptionError,
    NonStringEnvValueError,
    ReservedShellEnvKeyError,
    ShellEnvDeclaration,
    ShellEnvDeclarationError,
    ShellEnvRegistry,
    ShellEnvResolveError,
    UndeclaredEnvKeyError,
)

# -- built-ins and home -------------------------------------------------------------------------


async def test_a_call_without_agent_gets_home_and_shell_only(
    shell_env: ShellEnvRegistry, home: Path, execution_factory: Any
) -> None:
    snapshot = await shell_env.collect(execution_factory())
    assert dict(snapshot) == {"DSH_HOME": str(home), "DSH_SHELL": "1"}


async def test_a_call_with_agent_also_gets_its_session_id(
    shell_env: ShellEnvRegistry, home: Path, execution_factory: Any, caller: Any
) -> None:
    snapshot = await shell_env.collect(execution_factory(caller))
    assert dict(snapshot) == {
        "DSH_HOME": str(home),
        "DSH_SHELL": "1",
        "DSH_SESSION_ID": "session-a",
    }


def test_an_explicit_home_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert ShellEnvRegistry("rel/home").dsh_home == tmp_path / "rel" / "home"


def test_the_ambient_dsh_home_is_used_without_an_explicit_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "ambient"))
    assert ShellEnvRegistry().dsh_home == tmp_path / "ambient"


def test_without_explicit_or_ambient_home_it_is_dot_dsh_under_the_user_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DSH_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ShellEnvRegistry().dsh_home == tmp_path / ".dsh"


async def test_the_home_is_resolved_once_at_construction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, execution_factory: Any
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "first"))
    registry = ShellEnvRegistry()
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "second"))
    snapshot = await registry.collect(execution_factory())
    assert snapshot["DSH_HOME"] == str(tmp_path / "first")


# -- snapshots ----------------------------------------------------------------------------------


async def test_a_snapshot_is_read_only(shell_env: ShellEnvRegistry, execution_factory: Any) -> None:
    snapshot = await shell_env.collect(execution_factory())
    assert isinstance(snapshot, MappingProxyType)
    with pytest.raises(TypeError):
        snapshot["DSH_SHELL"] = "0"  # type: ignore[index]


async def test_every_collection_is_a_fresh_snapshot_that_runs_the_resolvers_again(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any
) -> None:
    values = iter(["1", "2"])
    contributor = contributor_factory(
        "counter", {"DSH_COUNT": "A counter."}, lambda execution: {"DSH_COUNT": next(values)}
    )
    shell_env.register(contributor)
    first = await shell_env.collect(execution_factory())
    second = await shell_env.collect(execution_factory())
    assert (first["DSH_COUNT"], second["DSH_COUNT"]) == ("1", "2")
    assert first is not second


async def test_snapshots_list_builtins_first_then_contributors_in_name_order(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any, caller: Any
) -> None:
    shell_env.register(
        contributor_factory("zeta", {"DSH_A": "From zeta."}, lambda e: {"DSH_A": "z"})
    )
    shell_env.register(
        contributor_factory("alpha", {"DSH_Z": "From alpha."}, lambda e: {"DSH_Z": "a"})
    )
    snapshot = await shell_env.collect(execution_factory(caller))
    assert list(snapshot) == ["DSH_HOME", "DSH_SHELL", "DSH_SESSION_ID", "DSH_Z", "DSH_A"]


async def test_a_declared_key_the_resolver_omits_is_absent(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any
) -> None:
    shell_env.register(contributor_factory("maybe", {"DSH_MAYBE": "Only sometimes."}, lambda e: {}))
    assert "DSH_MAYBE" not in await shell_env.collect(execution_factory())


async def test_an_async_resolver_is_awaited(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any, caller: Any
) -> None:
    async def resolve(execution: Any) -> dict[str, str]:
        return {"DSH_CALLER": execution.session_id}

    shell_env.register(contributor_factory("async", {"DSH_CALLER": "The caller."}, resolve))
    assert (await shell_env.collect(execution_factory(caller)))["DSH_CALLER"] == "session-a"


async def test_collecting_never_changes_os_environ(
    shell_env: ShellEnvRegistry, execution_factory: Any, caller: Any
) -> None:
    before = dict(os.environ)
    await shell_env.collect(execution_factory(caller))
    assert dict(os.environ) == before


# -- registration and disposal ------------------------------------------------------------------


async def test_a_contributed_key_appears_while_registered_and_disappears_after_disposal(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any
) -> None:
    disposer = shell_env.register(
        contributor_factory("plug", {"DSH_PLUG": "A plugin fact."}, lambda e: {"DSH_PLUG": "on"})
    )
    assert (await shell_env.collect(execution_factory()))["DSH_PLUG"] == "on"
    disposer()
    assert "DSH_PLUG" not in await shell_env.collect(execution_factory())
    assert [row.key for row in shell_env.list()] == ["DSH_HOME", "DSH_SHELL", "DSH_SESSION_ID"]


async def test_the_disposer_is_a_context_manager(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any
) -> None:
    contributor = contributor_factory("plug", {"DSH_PLUG": "Fact."}, lambda e: {"DSH_PLUG": "on"})
    with shell_env.register(contributor):
        assert "DSH_PLUG" in await shell_env.collect(execution_factory())
    assert "DSH_PLUG" not in await shell_env.collect(execution_factory())


def test_after_disposal_the_name_and_keys_can_be_registered_again(
    shell_env: ShellEnvRegistry, contributor_factory: Any
) -> None:
    shell_env.register(contributor_factory("plug", {"DSH_PLUG": "Fact."})).dispose()
    shell_env.register(contributor_factory("plug", {"DSH_PLUG": "Fact again."}))
    assert shell_env.contributors() == ["plug"]


def test_disposing_twice_leaves_a_later_registration_alone(
    shell_env: ShellEnvRegistry, contributor_factory: Any
) -> None:
    first = shell_env.register(contributor_factory("plug", {"DSH_PLUG": "Fact."}))
    first()
    shell_env.register(contributor_factory("plug", {"DSH_PLUG": "Fact."}))
    first()
    assert shell_env.contributors() == ["plug"]


async def test_declarations_are_copied_at_registration(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any
) -> None:
    keys = {"DSH_PLUG": "Fact."}
    contributor = contributor_factory("plug", keys, lambda e: {"DSH_LATER": "x"})
    shell_env.register(contributor)
    keys["DSH_LATER"] = "Added after registration."
    with pytest.raises(UndeclaredEnvKeyError):
        await shell_env.collect(execution_factory())


# -- list() -------------------------------------------------------------------------------------


def test_list_shows_the_builtins_with_descriptions(shell_env: ShellEnvRegistry) -> None:
    rows = shell_env.list()
    assert [(row.contributor, row.key) for row in rows] == [
        (BUILTIN_CONTRIBUTOR, "DSH_HOME"),
        (BUILTIN_CONTRIBUTOR, "DSH_SHELL"),
        (BUILTIN_CONTRIBUTOR, "DSH_SESSION_ID"),
    ]
    assert all(row.description.strip() for row in rows)


def test_list_shows_contributor_keys_sorted_without_running_resolvers(
    shell_env: ShellEnvRegistry, contributor_factory: Any
) -> None:
    contributor = contributor_factory(
        "plug", {"DSH_ZED": "Last.", "DSH_ALPHA": "First."}, lambda e: {}
    )
    shell_env.register(contributor)
    assert shell_env.list()[3:] == [
        ShellEnvDeclaration("plug", "DSH_ALPHA", "First."),
        ShellEnvDeclaration("plug", "DSH_ZED", "Last."),
    ]
    assert contributor.calls == 0


# -- declaration failures -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "   "])
def test_a_blank_name_is_refused(
    shell_env: ShellEnvRegistry, contributor_factory: Any, name: str
) -> None:
    with pytest.raises(InvalidContributorError, match="name must be non-empty"):
        shell_env.register(contributor_factory(name, {"DSH_X": "X."}))


def test_a_duplicate_name_is_refused(shell_env: ShellEnvRegistry, contributor_factory: Any) -> None:
    shell_env.register(contributor_factory("plug", {"DSH_X": "X."}))
    with pytest.raises(DuplicateContributorError, match="'plug' is already registered") as info:
        shell_env.register(contributor_factory("plug", {"DSH_Y": "Y."}))
    assert info.value.contributor == "plug"


def test_the_builtin_contributor_name_cannot_be_taken(
    shell_env: ShellEnvRegistry, contributor_factory: Any
) -> None:
    with pytest.raises(DuplicateContributorError):
        shell_env.register(contributor_factory(BUILTIN_CONTRIBUTOR, {"DSH_X": "X."}))


@pytest.mark.parametrize("key", ["dsh_x", "DSH_", "DSH_1X", "DSH_lower", "DSH_A-B", "HOME", 7])
def test_an_invalid_key_is_refused_naming_contributor_and_key(
    shell_env: ShellEnvRegistry, contributor_factory: Any, key: object
) -> None:
    with pytest.raises(InvalidEnvKeyError, match="declared invalid key") as info:
        shell_env.register(contributor_factory("plug", {key: "Something."}))
    assert info.value.contributor == "plug"
    assert info.value.key == (key if isinstance(key, str) else repr(key))


@pytest.mark.parametrize("key", ["DSH_HOME", "DSH_SHELL", "DSH_SESSION_ID"])
def test_a_reserved_key_is_refused(
    shell_env: ShellEnvRegistry, contributor_factory: Any, key: str
) -> None:
    with pytest.raises(ReservedShellEnvKeyError, match=f"cannot own reserved key {key}"):
        shell_env.register(contributor_factory("plug", {key: "Mine."}))


@pytest.mark.parametrize("description", ["", "  ", None, 3])
def test_a_key_without_a_description_is_refused(
    shell_env: ShellEnvRegistry, contributor_factory: Any, description: object
) -> None:
    with pytest.raises(MissingKeyDescriptionError, match="must describe DSH_X") as info:
        shell_env.register(contributor_factory("plug", {"DSH_X": description}))
    assert info.value.key == "DSH_X"


def test_a_key_owned_by_another_contributor_is_refused_naming_both(
    shell_env: ShellEnvRegistry, contributor_factory: Any
) -> None:
    shell_env.register(contributor_factory("first", {"DSH_X": "X."}))
    with pytest.raises(KeyOwnershipError) as info:
        shell_env.register(contributor_factory("second", {"DSH_X": "Also X."}))
    assert str(info.value) == (
        "shell_env key DSH_X is already owned by contributor 'first'; contributor 'second' "
        "cannot also own it"
    )
    assert (info.value.owner, info.value.contributor, info.value.key) == (
        "first",
        "second",
        "DSH_X",
    )


def test_keys_that_are_not_a_mapping_are_refused(
    shell_env: ShellEnvRegistry, contributor_factory: Any
) -> None:
    with pytest.raises(InvalidContributorError, match="as a mapping"):
        shell_env.register(contributor_factory("plug", ["DSH_X"]))


def test_a_contributor_without_resolve_is_refused(shell_env: ShellEnvRegistry) -> None:
    class NoResolve:
        name = "plug"
        keys: ClassVar[dict[str, str]] = {"DSH_X": "X."}

    with pytest.raises(InvalidContributorError, match="no callable resolve"):
        shell_env.register(NoResolve())  # type: ignore[arg-type]


def test_a_refused_registration_changes_nothing(
    shell_env: ShellEnvRegistry, contributor_factory: Any
) -> None:
    with pytest.raises(ShellEnvDeclarationError):
        shell_env.register(contributor_factory("plug", {"DSH_GOOD": "Good.", "DSH_HOME": "No."}))
    assert shell_env.contributors() == []
    shell_env.register(contributor_factory("other", {"DSH_GOOD": "Now mine."}))


# -- resolution failures ------------------------------------------------------------------------


async def test_an_undeclared_returned_key_raises_at_collect(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any
) -> None:
    shell_env.register(contributor_factory("plug", {"DSH_X": "X."}, lambda e: {"DSH_Y": "y"}))
    with pytest.raises(UndeclaredEnvKeyError, match="'plug' returned undeclared key 'DSH_Y'"):
        await shell_env.collect(execution_factory())


async def test_a_returned_reserved_key_is_undeclared(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any, caller: Any
) -> None:
    spoof = contributor_factory("spoof", {"DSH_X": "X."}, lambda e: {"DSH_SESSION_ID": "fake"})
    shell_env.register(spoof)
    with pytest.raises(UndeclaredEnvKeyError) as info:
        await shell_env.collect(execution_factory(caller))
    assert info.value.key == "DSH_SESSION_ID"


@pytest.mark.parametrize("value", [1, None, b"bytes", "nul\0byte"])
async def test_a_non_string_value_raises_at_collect(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any, value: object
) -> None:
    shell_env.register(contributor_factory("plug", {"DSH_X": "X."}, lambda e: {"DSH_X": value}))
    with pytest.raises(
        NonStringEnvValueError, match="'plug' returned a non-string value for DSH_X"
    ):
        await shell_env.collect(execution_factory())


async def test_a_resolver_returning_a_non_mapping_raises_at_collect(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any
) -> None:
    shell_env.register(contributor_factory("plug", {"DSH_X": "X."}, lambda e: [("DSH_X", "x")]))
    with pytest.raises(ShellEnvResolveError, match="not a mapping"):
        await shell_env.collect(execution_factory())


async def test_an_exception_inside_a_resolver_propagates(
    shell_env: ShellEnvRegistry, execution_factory: Any, contributor_factory: Any
) -> None:
    def broken(execution: Any) -> dict[str, str]:
        raise RuntimeError("resolver broke")

    shell_env.register(contributor_factory("plug", {"DSH_X": "X."}, broken))
    with pytest.raises(RuntimeError, match="resolver broke"):
        await shell_env.collect(execution_factory())
