"""Shared fixtures: the format v0 logs the TypeScript harness wrote (copied, MIT data files)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# Properties must not fail on a slow or loaded machine: no per-example deadline.
settings.register_profile("dsh", deadline=None)
settings.load_profile("dsh")

FIXTURES = Path(__file__).parent / "fixtures" / "upstream-v0"
FIXTURE_FILES = sorted(FIXTURES.glob("*.jsonl"))


def fixture_lines(path: Path) -> list[bytes]:
    """Every physical line of a fixture (line 1 is the header), without newlines."""
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return data[:-1].split(b"\n")


@pytest.fixture(params=FIXTURE_FILES, ids=[p.stem for p in FIXTURE_FILES])
def fixture_file(request: pytest.FixtureRequest) -> Path:
    """Each upstream v0 fixture log in turn."""
    path: Path = request.param
    return path


@pytest.fixture
def fixture_log_lines(fixture_file: Path) -> list[bytes]:
    """The physical lines of the fixture under test."""
    return fixture_lines(fixture_file)


class Builders:
    """Data builders for tests (a fixture, since test modules cannot import each other)."""

    @staticmethod
    def user_message(text: str = "hi") -> dict[str, object]:
        """A ``user/message`` data object in the ``{content, source}`` shape."""
        return {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}}

    @staticmethod
    def assistant_message(
        *call_ids: str, text: str = "ok", turn: int = 1, step: int = 1
    ) -> dict[str, object]:
        """An ``assistant/message`` data object (flat shape) with a text block and tool calls."""
        content: list[object] = [{"type": "text", "text": text}] if text else []
        content += [
            {"type": "tool-call", "id": c, "name": "bash", "arguments": "{}"} for c in call_ids
        ]
        return {
            "turn": turn,
            "step": step,
            "content": content,
            "provenance": {"provider": "p", "model": "m"},
        }

    @staticmethod
    def tool_result(
        call_id: str, text: str = "out", turn: int = 1, step: int = 1
    ) -> dict[str, object]:
        """A ``tool/result`` data object in the ``{turn, step, callId, content, isError}`` shape."""
        return {
            "turn": turn,
            "step": step,
            "callId": call_id,
            "content": [{"type": "text", "text": text}],
            "isError": False,
        }

    fixture_lines = staticmethod(fixture_lines)


@pytest.fixture(scope="session")
def build() -> type[Builders]:
    """The test data builders."""
    return Builders
