"""Request headers (reference §1.7, seed 004): canonical form, equality, the fold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from dsh_session import (
    EpochHeader,
    Session,
    SessionHeader,
    decode_event,
    fold_request_header,
)

CONFIG = {"provider": "deepseek-official", "model": "deepseek-v4-flash"}
TOOL = {"name": "bash", "description": "Run.", "parameters": {"type": "object"}}
PREFIX = {
    "role": "user",
    "content": [{"type": "text", "text": "<skills/>"}],
    "source": {"kind": "plugin", "plugin": "skills"},
}


def _header(**fields: Any) -> EpochHeader:
    return EpochHeader.from_wire({"config": CONFIG, **fields})


def test_fixture_headers_fold_with_their_message_prefix(fixture_file: Path) -> None:
    lines = fixture_file.read_bytes().rstrip(b"\n").split(b"\n")
    events = [decode_event(line) for line in lines[1:] if b'"request/header"' in line[:30]]
    folded = fold_request_header(events)
    if not events:
        assert folded is None
        return
    assert folded is not None
    wire = events[-1].data["header"]  # type: ignore[index]
    assert folded.config == wire["config"]
    assert folded.message_prefix == wire.get("messagePrefix")
    assert folded.tools == wire["tools"]


def test_canonical_form_drops_empty_system_tools_and_prefix() -> None:
    header = _header(system="", tools=[], messagePrefix=[]).canonical()
    assert header.to_wire() == {"config": CONFIG}


def test_adapter_defaults_are_kept_only_with_a_true_flag() -> None:
    assert _header(adapterDefaults={"reasoningEffort": False}).canonical().adapter_defaults is None
    kept = _header(adapterDefaults={"reasoningEffort": True, "maxTokens": False}).canonical()
    assert kept.to_wire()["adapterDefaults"] == {"reasoningEffort": True}


def test_equality_compares_canonical_forms() -> None:
    assert _header(system="", tools=[]) == _header()
    assert _header(adapterDefaults={"maxTokens": False}) == _header()
    assert _header(system="a") != _header(system="b")
    assert _header(tools=[TOOL]) != _header()
    assert _header(adapterDefaults={"maxTokens": True}) != _header()
    assert _header(config={**CONFIG, "reasoningEffort": "high"}) != _header()


def test_message_prefix_takes_part_in_equality() -> None:
    assert _header(messagePrefix=[PREFIX]) != _header()
    assert _header(messagePrefix=[PREFIX]) == _header(messagePrefix=[dict(PREFIX)])


def test_tools_compare_in_order_by_their_json() -> None:
    other = {**TOOL, "name": "read"}
    assert _header(tools=[TOOL, other]) != _header(tools=[other, TOOL])
    reordered = {"description": "Run.", "name": "bash", "parameters": {"type": "object"}}
    assert _header(tools=[TOOL]) != _header(tools=[reordered])


def test_config_equality_ignores_key_order() -> None:
    assert _header(config={"model": CONFIG["model"], "provider": CONFIG["provider"]}) == _header()


@pytest.mark.parametrize(
    "wire",
    [
        {"config": {"model": "m"}},
        {"config": {"provider": "p", "model": ""}},
        {"config": {**CONFIG, "reasoningEffort": 3}},
        {"config": CONFIG, "adapterDefaults": {"reasoningEffort": "yes"}},
        {"config": CONFIG, "unknown": 1},
    ],
)
def test_invalid_headers_are_refused(wire: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        EpochHeader.from_wire(wire)


def test_the_session_folds_the_last_header_incrementally() -> None:
    session = Session(SessionHeader(id="s", created_at=1))
    assert session.request_header is None
    session.append(
        "request/header", {"header": {"config": CONFIG, "system": "a"}, "reason": "initial"}
    )
    session.append(
        "request/header",
        {"header": {"config": CONFIG, "system": "", "messagePrefix": [PREFIX]}, "reason": "change"},
    )
    folded = session.request_header
    assert folded == _header(messagePrefix=[PREFIX])
    assert folded is not None
    assert folded.system is None
    assert fold_request_header(list(session.events)) == folded


def test_to_wire_keeps_the_key_order_of_the_wire() -> None:
    header = _header(
        messagePrefix=[PREFIX], tools=[TOOL], system="s", adapterDefaults={"maxTokens": True}
    )
    assert list(header.to_wire()) == [
        "config",
        "adapterDefaults",
        "system",
        "tools",
        "messagePrefix",
    ]
