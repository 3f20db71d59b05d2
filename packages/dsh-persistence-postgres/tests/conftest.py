"""Shared fixtures: the server's DSN, a fresh schema per test (dropped after), builders.

The server is ``DSH_TEST_POSTGRES_DSN`` (default ``postgresql://postgres@127.0.0.1:5432/test``).
When it cannot be reached every test here fails (never skips): a missing server is a broken
test environment, not a reason to pass.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from dsh_persistence_postgres import PostgresPersistence
from dsh_session import SessionEvent, SessionHeader, make_event

DSN = os.environ.get("DSH_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
CHILD_FACTORY = f"{Path(__file__).parent / 'child_factory.py'}:make"


def admin() -> psycopg.Connection:
    """A plain autocommit connection to the test server (out-of-band SQL); fails loudly."""
    try:
        return psycopg.connect(DSN, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        pytest.fail(f"the PostgreSQL test server is not reachable at {DSN}: {error}")


def drop_schema(schema: str) -> None:
    """``DROP SCHEMA ... CASCADE`` (idempotent)."""
    with admin() as connection:
        connection.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


@pytest.fixture
def schema() -> Iterator[str]:
    """A unique schema name for this test (the server must be up); dropped afterwards."""
    name = f"dsh_test_{uuid.uuid4().hex}"
    with admin():
        pass
    try:
        yield name
    finally:
        drop_schema(name)


@pytest.fixture
def make_store(schema: str) -> Callable[..., PostgresPersistence]:
    """A factory of instances over this test's schema."""
    return lambda **kwargs: PostgresPersistence(DSN, schema=schema, **kwargs)


class Make:
    """Builders of headers and events (test modules get it through the ``mk`` fixture)."""

    dsn = DSN
    child_factory = CHILD_FACTORY
    admin = staticmethod(admin)
    drop_schema = staticmethod(drop_schema)

    @staticmethod
    def child_args(schema: str, **extra: Any) -> dict[str, Any]:
        """What ``child_factory.make`` takes."""
        return {"dsn": DSN, "schema": schema, **extra}

    @staticmethod
    def header(session_id: str = "s-1", cwd: str | None = "/home/u/project") -> SessionHeader:
        """A plain unseeded header."""
        return SessionHeader(id=session_id, created_at=1000, cwd=cwd)

    @staticmethod
    def one_turn(start: int = 0, turn: int = 1, text: str = "hello") -> list[SessionEvent]:
        """turn/start, user/message, step/start, assistant/message, step/end, turn/end."""
        t = 2000 + start
        return [
            make_event("turn/start", start, t, {"turn": turn}),
            make_event(
                "user/message",
                start + 1,
                t,
                {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}},
                surface_op="append",
            ),
            make_event("step/start", start + 2, t, {"turn": turn, "step": 1}),
            make_event(
                "assistant/message",
                start + 3,
                t,
                {
                    "turn": turn,
                    "step": 1,
                    "content": [{"type": "text", "text": text}],
                    "provenance": {"provider": "mock", "model": "mock"},
                },
                surface_op="append",
            ),
            make_event("step/end", start + 4, t, {"turn": turn, "step": 1}),
            make_event("turn/end", start + 5, t, {"turn": turn, "reason": {"kind": "completed"}}),
        ]

    @staticmethod
    def user(seq: int, text: str) -> SessionEvent:
        """One user/message event."""
        return make_event(
            "user/message",
            seq,
            5000 + seq,
            {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}},
            surface_op="append",
        )


@pytest.fixture
def mk() -> type[Make]:
    """The builders."""
    return Make
