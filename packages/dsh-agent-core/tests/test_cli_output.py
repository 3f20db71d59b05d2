"""The dsh command prints names and messages as they are: no rich markup or emoji codes."""

from __future__ import annotations

import io

import pytest

from dsh_agent_core.cli import _common


@pytest.mark.parametrize("console", [_common.out, _common.err])
def test_colons_in_names_are_not_emoji_codes(console: object) -> None:
    buffer = io.StringIO()
    console.file = buffer  # type: ignore[attr-defined]
    try:
        console.print("model needs-key:m: the environment variable :smile: is unset")  # type: ignore[attr-defined]
    finally:
        console.file = None  # type: ignore[attr-defined]  # back to its stream
    assert buffer.getvalue() == "model needs-key:m: the environment variable :smile: is unset\n"
