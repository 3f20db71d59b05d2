"""Shared fixtures: the format v0 logs the TypeScript harness wrote (copied, MIT data files)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
