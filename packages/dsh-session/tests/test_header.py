"""The session header and its physical line 1 (reference §1.2, §3.3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from dsh_session import (
    HeaderDecodeError,
    SessionHeader,
    UnsupportedFormatVersionError,
    decode_header_line,
    encode_header_line,
)


def test_every_fixture_header_round_trips_byte_for_byte(fixture_log_lines: list[bytes]) -> None:
    header, inherited = decode_header_line(fixture_log_lines[0])
    assert encode_header_line(header, inherited) == fixture_log_lines[0]


def test_fixture_header_fields_are_read(fixture_file: Path) -> None:
    header, inherited = decode_header_line(fixture_file.read_bytes().split(b"\n")[0])
    assert header.version == 0
    assert header.id == f"session-{fixture_file.stem.split('--')[0]}"
    assert inherited == 0
    assert not header.is_seeded


def test_a_header_without_cwd_and_one_with_an_agent_preset_are_read() -> None:
    line = b'{"type":"session","version":0,"id":"s","createdAt":1,"agentPreset":"minimal"}'
    header, _ = decode_header_line(line)
    assert header.cwd is None
    assert header.agent_preset == "minimal"


def test_version_is_checked_before_anything_else() -> None:
    with pytest.raises(UnsupportedFormatVersionError) as info:
        decode_header_line(b'{"version":5,"nonsense":true}')
    assert info.value.version == 5


def test_a_missing_version_is_a_decode_error() -> None:
    with pytest.raises(HeaderDecodeError, match="no version"):
        decode_header_line(b'{"type":"session","id":"s","createdAt":1}')


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b"[1]",
        b'{"type":"event","version":0,"id":"s","createdAt":1}',
        b'{"type":"session","version":0,"id":"","createdAt":1}',
        b'{"type":"session","version":0,"id":"s","createdAt":-1}',
        b'{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"relative/dir"}',
        b'{"type":"session","version":0,"id":"s","createdAt":1,"origin":"human"}',
        b'{"type":"session","version":0,"id":"s","createdAt":1,"sandboxMode":"x"}',
        b'{"type":"session","version":0,"id":"s","createdAt":1,"seedLength":0}',
        b'{"type":"session","version":0,"id":"s","createdAt":1,"cwd":null}',
        b'{"type":"session","version":0,"id":"s","createdAt":"1"}',
    ],
)
def test_malformed_headers_raise_header_decode_error(line: bytes) -> None:
    with pytest.raises(HeaderDecodeError):
        decode_header_line(line)


def test_seed_length_is_the_on_disk_form_of_the_inherited_count() -> None:
    header = SessionHeader(id="child", created_at=5, parent_session="parent", is_seeded=True)
    line = encode_header_line(header, 7)
    assert line == (
        b'{"type":"session","version":0,"id":"child","createdAt":5,'
        b'"parentSession":"parent","seedLength":7}'
    )
    assert decode_header_line(line) == (header, 7)


def test_a_seeded_header_needs_a_cut_and_an_unseeded_one_refuses_one() -> None:
    with pytest.raises(ValueError, match="seeded"):
        encode_header_line(SessionHeader(id="s", created_at=1, is_seeded=True), 0)
    with pytest.raises(ValueError, match="not seeded"):
        encode_header_line(SessionHeader(id="s", created_at=1), 3)


def test_optional_fields_are_written_in_the_writer_order() -> None:
    header = SessionHeader(
        id="s",
        created_at=1,
        cwd="/w",
        origin="subagent",
        delegation_depth=2,
        agent_preset="p",
    )
    assert encode_header_line(header) == (
        b'{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w",'
        b'"origin":"subagent","delegationDepth":2,"agentPreset":"p"}'
    )


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"session","version":0,"id":"s","createdAt":5}',
        b'{"type":"session","version":0,"id":"s","createdAt":5,"cwd":"/w"}',
        b'{"type":"session","version":0,"id":"s","createdAt":5,"cwd":"C:\\\\w"}',
        b'{"type":"session","version":0,"id":"s","createdAt":5,"agentPreset":"p"}',
    ],
)
def test_a_decoded_header_is_the_model_validation_builds(line: bytes) -> None:
    header, cut = decode_header_line(line)
    wire = json.loads(line)
    del wire["type"]
    built = SessionHeader.model_validate({**wire, "isSeeded": False})
    assert cut == 0
    assert header == built
    assert hash(header) == hash(built)
    assert repr(header) == repr(built)
    assert header.model_fields_set == built.model_fields_set
    assert header.model_dump(exclude_unset=True) == built.model_dump(exclude_unset=True)
    with pytest.raises(ValidationError):
        header.id = "other"  # type: ignore[misc]


def test_the_header_is_immutable_and_validated() -> None:
    header = SessionHeader(id="s", created_at=1)
    with pytest.raises(ValidationError):
        header.id = "t"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        SessionHeader(id="s", created_at=1, cwd="relative")


@pytest.mark.parametrize("field", ["id", "cwd"])
def test_a_nul_in_the_id_or_cwd_is_refused_when_the_header_is_made(field: str) -> None:
    # the id travels as DSH_SESSION_ID into every command; no environment can carry a NUL
    fields = {"id": "s-1", "createdAt": 1, "cwd": "/w", field: "/a\x00b"}
    with pytest.raises(ValidationError, match="NUL"):
        SessionHeader.model_validate(fields)
    line = json.dumps({"type": "session", "version": 0, **fields}).encode()
    with pytest.raises(HeaderDecodeError):
        decode_header_line(line)


def test_an_id_holding_a_lone_surrogate_is_a_header_like_any_other() -> None:
    # JSONL stores such an id (JSON escapes it), so every backend must: the model may not refuse
    header = SessionHeader(id="a\ud800", created_at=1, cwd="/w\udfff")
    line = encode_header_line(header, 0)
    assert line == b'{"type":"session","version":0,"id":"a\\ud800","createdAt":1,"cwd":"/w\\udfff"}'
    assert decode_header_line(line)[0] == header
    with pytest.raises(ValidationError, match="cannot be empty"):
        SessionHeader(id="", created_at=1)
