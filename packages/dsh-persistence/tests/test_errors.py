"""The error vocabulary: one base, each error carrying the session id and its facts."""

from __future__ import annotations

import pickle

import pytest

from dsh_persistence import (
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionFormatUnsupportedError,
    SessionHandleClosedError,
    SessionOwnershipLostError,
    SessionPersistenceCorruptionError,
    SessionPersistenceError,
    SessionPersistenceNotFoundError,
    SessionReadOnlyError,
    SessionStorageError,
)

ERRORS = [
    SessionPersistenceNotFoundError("s-1"),
    SessionAlreadyExistsError("s-1"),
    SessionAlreadyOwnedError("s-1", holder="pid 42"),
    SessionReadOnlyError("s-1", operation="append"),
    SessionHandleClosedError("s-1", operation="read"),
    SessionOwnershipLostError("s-1", reason="lease expired"),
    SessionPersistenceCorruptionError("s-1", "bad json", artifact="/r/s.jsonl", line=7),
    SessionFormatUnsupportedError("s-1", "unknown type", event_type="x/y", artifact="/r/s.jsonl"),
    SessionStorageError(
        "s-1", operation="flush", reason="no space left on device", artifact="/r/s.jsonl", errno=28
    ),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_every_error_is_a_session_persistence_error_naming_the_session(
    error: SessionPersistenceError,
) -> None:
    assert isinstance(error, SessionPersistenceError)
    assert error.session_id == "s-1"
    assert "'s-1'" in str(error)


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_every_error_survives_pickling_with_its_facts(error: SessionPersistenceError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert vars(copy) == vars(error)


def test_not_found_message_is_the_plain_fact() -> None:
    assert str(SessionPersistenceNotFoundError("abc")) == "session 'abc' not found"


def test_corruption_names_artifact_and_line() -> None:
    error = SessionPersistenceCorruptionError("s", "not JSON", artifact="/root/x.jsonl", line=3)
    assert (error.artifact, error.line, error.row) == ("/root/x.jsonl", 3, None)
    assert "/root/x.jsonl line 3" in str(error)


def test_corruption_can_name_a_row_instead_of_a_line() -> None:
    error = SessionPersistenceCorruptionError("s", "checksum", artifact="events", row=12)
    assert error.row == 12
    assert "events row 12" in str(error)


def test_format_unsupported_names_the_raw_log() -> None:
    error = SessionFormatUnsupportedError("s", "too new", artifact="/root/x.jsonl", version=3)
    assert error.version == 3
    assert str(error).endswith("(raw log: /root/x.jsonl)")


def test_owned_error_tells_what_to_do() -> None:
    message = str(SessionAlreadyOwnedError("s"))
    assert "already open for writing" in message
    assert "access='read'" in message


def test_storage_error_names_operation_artifact_and_cause() -> None:
    error = SessionStorageError(
        "s", operation="append to", reason="read-only file system", artifact="/r/x.jsonl", errno=30
    )
    assert (error.operation, error.artifact, error.errno) == ("append to", "/r/x.jsonl", 30)
    assert str(error) == "cannot append to session 's' (/r/x.jsonl): read-only file system"
