"""Shared fixtures: the four storage variants and small builders of headers and events."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import settings

from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import SessionEvent, SessionHeader, decode_header_line, make_event

# Properties must not fail on a slow or loaded machine: no per-example deadline.
settings.register_profile("dsh", deadline=None)
settings.load_profile("dsh")

FIXTURES = Path(__file__).parent / "fixtures" / "upstream-v0"
CHILD_FACTORY = f"{Path(__file__).parent / 'child_factory.py'}:make"


@dataclass(frozen=True)
class Variant:
    """One storage configuration the suites run against."""

    name: str
    compression: Literal["none", "zstd"]
    pack_chunks: bool

    def make(self, root: Path) -> JsonlPersistence:
        return JsonlPersistence(root, compression=self.compression, pack_chunks=self.pack_chunks)

    @property
    def child_args(self) -> dict[str, Any]:
        return {"compression": self.compression, "pack_chunks": self.pack_chunks}


VARIANTS = {
    "none": Variant("none", "none", False),
    "none+pack": Variant("none+pack", "none", True),
    "zstd": Variant("zstd", "zstd", False),
    "zstd+pack": Variant("zstd+pack", "zstd", True),
}
_ENV_NAMES = {"none": "none", "none-pack": "none+pack", "zstd": "zstd", "zstd-pack": "zstd+pack"}


def selected_variants() -> list[str]:
    """Every variant, or only the one ``DSH_JSONL_VARIANT`` names (none, none-pack, zstd or
    zstd-pack)."""
    chosen = os.environ.get("DSH_JSONL_VARIANT")
    if not chosen:
        return list(VARIANTS)
    if chosen not in _ENV_NAMES:
        raise pytest.UsageError(
            f"DSH_JSONL_VARIANT must be one of {sorted(_ENV_NAMES)}, got {chosen!r}"
        )
    return [_ENV_NAMES[chosen]]


@pytest.fixture(params=selected_variants())
def variant(request: pytest.FixtureRequest) -> Variant:
    """Each selected storage variant in turn."""
    return VARIANTS[request.param]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty JSONL root (not created yet: the backend creates it on first write)."""
    return tmp_path / "sessions"


class Make:
    """Builders of headers and events (test modules get it through the ``mk`` fixture)."""

    fixtures = FIXTURES
    child_factory = CHILD_FACTORY

    @staticmethod
    def header(session_id: str = "s-1", cwd: str | None = "/home/u/project") -> SessionHeader:
        """A plain unseeded header, decoded from its wire line (so any id, lone surrogates
        included, can be built)."""
        wire: dict[str, Any] = {"type": "session", "version": 0, "id": session_id}
        wire["createdAt"] = 1000
        if cwd is not None:
            wire["cwd"] = cwd
        header, _cut = decode_header_line(json.dumps(wire, separators=(",", ":")).encode())
        return header

    @staticmethod
    def one_turn(start: int = 0, turn: int = 1) -> list[SessionEvent]:
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
                    "content": [{"type": "text", "text": "hello"}],
                    "provenance": {"provider": "mock", "model": "mock"},
                },
                surface_op="append",
            ),
            make_event("step/end", start + 4, t, {"turn": turn, "step": 1}),
            make_event("turn/end", start + 5, t, {"turn": turn, "reason": {"kind": "completed"}}),
        ]

    @staticmethod
    def text_chunks(start: int, count: int, turn: int = 1) -> list[SessionEvent]:
        """``count`` consecutive packable text-delta chunk events from seq ``start``."""
        return [
            make_event(
                "assistant/chunk",
                start + k,
                3000 + k,
                {
                    "turn": turn,
                    "step": 1,
                    "chunk": {"type": "text-delta", "index": 0, "text": f"t{k}"},
                },
            )
            for k in range(count)
        ]

    @staticmethod
    def lines_of(path: Path) -> list[bytes]:
        """The physical lines of a plain log."""
        return path.read_bytes().split(b"\n")[:-1]


@pytest.fixture
def mk() -> type[Make]:
    """The builders."""
    return Make


@pytest.fixture
def make_store(root: Path, variant: Variant) -> Callable[[], JsonlPersistence]:
    """A factory of instances over the test's root in the current variant."""
    return lambda: variant.make(root)
