"""Shared fixtures: the storage variants, the database path, builders of headers and events."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence_sqlite import SqlitePersistence
from dsh_session import SessionEvent, SessionHeader, make_event

CHILD_FACTORY = f"{Path(__file__).parent / 'child_factory.py'}:make"


@dataclass(frozen=True)
class Variant:
    """One storage configuration the suites run against."""

    name: str
    compression: bool
    pack_chunks: bool = False

    def make(self, path: Path, **kwargs: Any) -> SqlitePersistence:
        return SqlitePersistence(
            path, compression=self.compression, pack_chunks=self.pack_chunks, **kwargs
        )

    @property
    def child_args(self) -> dict[str, Any]:
        return {"compression": self.compression, "pack_chunks": self.pack_chunks}


VARIANTS = {
    "compressed": Variant("compressed", compression=True),
    "plain": Variant("plain", compression=False),
    "packed": Variant("packed", compression=True, pack_chunks=True),
}


def selected_variants() -> list[str]:
    """Every variant, or only the one ``DSH_SQLITE_VARIANT`` (compressed|plain|packed) names."""
    chosen = os.environ.get("DSH_SQLITE_VARIANT")
    if not chosen:
        return list(VARIANTS)
    if chosen not in VARIANTS:
        raise pytest.UsageError(
            f"DSH_SQLITE_VARIANT must be one of {sorted(VARIANTS)}, got {chosen!r}"
        )
    return [chosen]


@pytest.fixture(params=selected_variants())
def variant(request: pytest.FixtureRequest) -> Variant:
    """Each selected storage variant in turn."""
    return VARIANTS[request.param]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's database lives (not created yet)."""
    return tmp_path / "data" / "sessions.db"


@pytest.fixture
def make_store(db_path: Path, variant: Variant) -> Callable[..., SqlitePersistence]:
    """A factory of instances over the test's database in the current variant."""
    return lambda **kwargs: variant.make(db_path, **kwargs)


def raw_connection(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection to ``path`` (autocommit), for out-of-band changes."""
    return sqlite3.connect(path, isolation_level=None)


class Make:
    """Builders of headers and events (test modules get it through the ``mk`` fixture)."""

    child_factory = CHILD_FACTORY
    raw_connection = staticmethod(raw_connection)

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
    def text_chunks(start: int, count: int, turn: int = 1, text: str = "t") -> list[SessionEvent]:
        """``count`` consecutive packable text-delta chunk events from seq ``start``."""
        return [
            make_event(
                "assistant/chunk",
                start + k,
                3000 + k,
                {
                    "turn": turn,
                    "step": 1,
                    "chunk": {"type": "text-delta", "index": 0, "text": f"{text}{k}"},
                },
            )
            for k in range(count)
        ]


@pytest.fixture
def mk() -> type[Make]:
    """The builders."""
    return Make
