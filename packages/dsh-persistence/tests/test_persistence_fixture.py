"""PersistenceFixture refuses declarations it could not honour."""

from __future__ import annotations

import pytest

from dsh_persistence.testing import CAPABILITIES, PersistenceFixture


def test_known_capabilities_are_documented() -> None:
    assert set(CAPABILITIES) == {
        "reopen",
        "cross_process",
        "corrupt_tail",
        "damage_event",
        "replace_record",
        "plain_path",
    }
    assert all(CAPABILITIES.values())


def test_unknown_capability_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"'reopn'.*cross_process"):
        PersistenceFixture(factory=object, capabilities=frozenset({"reopn"}))


def test_corrupt_tail_capability_needs_its_hook() -> None:
    with pytest.raises(ValueError, match="corrupt_tail hook"):
        PersistenceFixture(factory=object, capabilities=frozenset({"reopen", "corrupt_tail"}))


def test_replace_record_capability_needs_its_hook_and_reopen() -> None:
    with pytest.raises(ValueError, match="replace_record hook"):
        PersistenceFixture(factory=object, capabilities=frozenset({"reopen", "replace_record"}))
    with pytest.raises(ValueError, match="needs 'reopen'"):
        PersistenceFixture(
            factory=object,
            capabilities=frozenset({"replace_record"}),
            replace_record=lambda session_id, seq, record: None,
        )


def test_cross_process_capability_needs_a_child_factory() -> None:
    with pytest.raises(ValueError, match="child_factory"):
        PersistenceFixture(factory=object, capabilities=frozenset({"reopen", "cross_process"}))


def test_cross_process_capability_needs_reopen() -> None:
    with pytest.raises(ValueError, match="needs 'reopen'"):
        PersistenceFixture(
            factory=object, capabilities=frozenset({"cross_process"}), child_factory="m:f"
        )


def test_child_factory_must_name_module_and_function() -> None:
    with pytest.raises(ValueError, match="module:function"):
        PersistenceFixture(factory=object, child_factory="just_a_module")


async def test_instance_accepts_sync_and_async_factories() -> None:
    sentinel = object()

    async def make_async() -> object:
        return sentinel

    assert await PersistenceFixture(factory=lambda: sentinel).instance() is sentinel
    assert await PersistenceFixture(factory=make_async).instance() is sentinel
