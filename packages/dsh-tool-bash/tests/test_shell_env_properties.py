"""Properties of the shell_env registry over arbitrary declarations and values."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_shell import ShellExecSpec, validate_dsh_key
from dsh_tool_bash import RESERVED_KEYS, ShellEnvDeclarationError, ShellEnvRegistry
from dsh_tools import ToolExecution

_SPEC = re.compile(r"DSH_[A-Z][A-Z0-9_]*")

_keys = st.one_of(
    st.from_regex(r"\ADSH_[A-Z][A-Z0-9_]{0,12}\Z"),
    st.text(alphabet="DSHdsh_AZaz09-", max_size=10),
    st.sampled_from(sorted(RESERVED_KEYS)),
)


class _Contributor:
    def __init__(self, keys: dict[str, str], values: dict[str, str]) -> None:
        self.name = "prop"
        self.keys = keys
        self._values = values

    def resolve(self, execution: Any) -> dict[str, str]:
        return self._values


@given(key=_keys)
def test_a_key_is_accepted_only_when_it_is_a_valid_unreserved_managed_key(key: str) -> None:
    registry = ShellEnvRegistry("/srv/dsh")
    contributor = _Contributor({key: "Described."}, {})
    if _SPEC.fullmatch(key) and key not in RESERVED_KEYS:
        registry.register(contributor)
        assert validate_dsh_key(key) == key
        return
    with pytest.raises(ShellEnvDeclarationError) as info:
        registry.register(contributor)
    assert (info.value.contributor, info.value.key) == ("prop", key)


@given(
    values=st.dictionaries(
        st.from_regex(r"\ADSH_[A-Z][A-Z0-9_]{0,8}\Z").filter(lambda k: k not in RESERVED_KEYS),
        st.text(alphabet=st.characters(blacklist_characters="\0"), max_size=20),
        max_size=5,
    ),
    session_id=st.one_of(
        st.none(), st.text(min_size=1, max_size=12).filter(lambda s: "\0" not in s)
    ),
)
async def test_every_accepted_snapshot_is_a_valid_spec_overlay(
    values: dict[str, str], session_id: str | None
) -> None:
    registry = ShellEnvRegistry("/srv/dsh")
    registry.register(_Contributor(dict.fromkeys(values, "Described."), values))

    class Caller:
        cwd = None

    caller: Any = None
    if session_id is not None:
        caller = Caller()
        caller.session = SimpleNamespace(header=SimpleNamespace(id=session_id))
    snapshot = await registry.collect(ToolExecution("c", "bash", {}, caller))
    spec = ShellExecSpec("true", "/", 1.0, 1, dsh_env=snapshot)
    assert dict(spec.dsh_env or {}) == {
        "DSH_HOME": "/srv/dsh",
        "DSH_SHELL": "1",
        **({} if session_id is None else {"DSH_SESSION_ID": session_id}),
        **values,
    }
