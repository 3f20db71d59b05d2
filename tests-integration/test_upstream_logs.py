"""Issue 13, done when: every log the TypeScript harness wrote that we hold (the eleven of
``shared/fixtures/upstream-v0``, copied in ``packages/dsh-session/tests/fixtures/upstream-v0``,
and the sixteen real logs of ``fixtures/upstream-real``: other source kinds, attachment images,
pre-react-loop records) becomes a ``Session``, derives, opens for write through JSONL (plain and
zstd) and SQLite, and takes a resume append of current-shape events after its stored ones, which
stay exactly as they were.

JSONL plain gets the harness's file itself, byte for byte, at its layout path; zstd and SQLite
get the same events through ``create`` + ``append``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from dsh_agent_loop import AgentLoop
from dsh_llm import TextBlock, UserMessage
from dsh_llm.testing import ScriptedModel, text_response
from dsh_persistence import SessionPersistence
from dsh_persistence_jsonl import JsonlPersistence
from dsh_persistence_sqlite import SqlitePersistence
from dsh_session import (
    Session,
    SessionEvent,
    SessionHeader,
    decode_header_line,
    decode_rows,
    encode_event,
    interrupted_turn_closers,
)
from dsh_tools import ToolRegistry

FIXTURES = Path(__file__).parents[1] / "packages" / "dsh-session" / "tests" / "fixtures"
LOGS = sorted((FIXTURES / "upstream-v0").glob("*.jsonl")) + sorted(
    (FIXTURES / "upstream-real").glob("*.jsonl")
)
BACKENDS: dict[str, Callable[[Path], SessionPersistence]] = {
    "jsonl-plain": lambda root: JsonlPersistence(root / "jsonl"),
    "jsonl-zstd": lambda root: JsonlPersistence(root / "zstd", compression="zstd"),
    "sqlite": lambda root: SqlitePersistence(root / "store.db"),
    "sqlite-plain-packed": lambda root: SqlitePersistence(
        root / "plain.db", compression=False, pack_chunks=True
    ),
}


def _read_log(path: Path) -> tuple[SessionHeader, int, list[SessionEvent]]:
    lines = path.read_bytes()[:-1].split(b"\n")
    header, inherited = decode_header_line(lines[0])
    events, consumed = decode_rows(lines[1:], 0)
    assert consumed == len(lines) - 1, f"{path.name}: line {consumed + 2} did not decode"
    return header, inherited, events


@pytest.fixture(params=sorted(BACKENDS))
async def stored(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[str, SessionPersistence]]:
    """A fresh backend of each configuration."""
    name: str = request.param
    persistence = BACKENDS[name](tmp_path)
    try:
        yield name, persistence
    finally:
        await persistence.aclose()


async def _place(
    name: str, persistence: SessionPersistence, path: Path, header: SessionHeader, inherited: int
) -> None:
    events = _read_log(path)[2]
    if name == "jsonl-plain":
        assert isinstance(persistence, JsonlPersistence)
        _copy(path, persistence.log_path(header))
        return
    async with await persistence.create(header, inherited_event_count=inherited) as handle:
        if events:
            await handle.append(events)
        await handle.flush()


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes())


def _starts_with(path: Path, prefix: Path) -> bool:
    return path.read_bytes().startswith(prefix.read_bytes())


def _resume_events(session: Session) -> list[SessionEvent]:
    """What a resume appends: a new turn with a user message, in the current shape."""
    turns = [
        e.to_wire()["data"]["turn"] for e in session.events if e.type in ("turn/start", "turn/end")
    ]
    turn = max(turns, default=0) + 1
    time = max((e.time for e in session.events), default=0) + 1
    first = session.next_seq
    session.append("turn/start", {"turn": turn}, time=time)
    session.append(
        "user/message",
        {
            "content": [{"type": "text", "text": "resumed"}],
            "source": {"kind": "user"},
            "role": "user",
            "id": f"resume-{turn}",
        },
        time=time,
    )
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, time=time)
    return list(session.events[first:])


def _bytes(events: Sequence[SessionEvent]) -> list[bytes]:
    return [encode_event(event) for event in events]


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
async def test_a_harness_log_opens_for_write_and_takes_a_resume_append(
    stored: tuple[str, SessionPersistence], path: Path
) -> None:
    name, persistence = stored
    header, inherited, original = _read_log(path)
    await _place(name, persistence, path, header, inherited)
    if not original and name != "jsonl-plain":
        return  # a header-only log: create stores nothing until the first append

    async with await persistence.open(header.id, "write") as handle:  # no unknown-type refusal
        events = list(await handle.read(0))
        assert _bytes(events) == _bytes(original)
        closers = interrupted_turn_closers(events)
        session = Session(
            handle.header, [*events, *closers], inherited_event_count=handle.inherited_event_count
        )
        before = len(session.derive_messages())
        appended = [*closers, *_resume_events(session)]
        await handle.append(appended)
        await handle.flush()
        assert len(session.derive_messages()) == before + 1

    async with await persistence.open(header.id, "read") as reader:
        reread = list(await reader.read(0))
    assert _bytes(reread[: len(original)]) == _bytes(original)  # the stored events as they were
    assert _bytes(reread[len(original) :]) == _bytes(appended)
    again = Session(header, reread, inherited_event_count=inherited)
    last: Any = again.derive_messages()[-1]
    assert last.id.startswith("resume-")
    if name == "jsonl-plain":
        assert isinstance(persistence, JsonlPersistence)
        assert _starts_with(persistence.log_path(header), path)


LEGACY = [p for p in LOGS if p.parent.name == "upstream-real" and "--de9a8692df" in p.name] + [
    p for p in LOGS if p.name.startswith("steering--session--8345bb04a0")
]


@pytest.mark.parametrize("path", LEGACY, ids=[p.stem for p in LEGACY])
async def test_an_agent_loop_resumes_a_pre_react_loop_log_and_runs_a_turn(
    tmp_path: Path, path: Path
) -> None:
    """The pre-react-loop logs resume through the real loop: the old records are projected (the
    steer reaches the model as the identified user message), a new turn runs with the request
    invariant on, and the stored lines stay the first lines of the file."""
    header, _, original = _read_log(path)
    store = JsonlPersistence(tmp_path)
    _copy(path, store.log_path(header))
    model = ScriptedModel([text_response("Resumed.")])
    loop = AgentLoop(model, ToolRegistry(), persistence=store, check_requests=True)
    try:
        agent = await loop.resume(header.id, system="You are resumed.")
        agent.followup("continue")
        await agent.wait_idle()
        await agent.aclose()
        assert loop.invariant_failures == []
    finally:
        await loop.aclose()
        await store.aclose()
    (request,) = model.requests
    sent = [m for m in request.messages if isinstance(m, UserMessage)]
    assert sent[-1].content == [TextBlock(text="continue")]
    flat_steers = [
        e.seq for e in original if e.type == "steering/message" and "content" in e.to_wire()["data"]
    ]
    ids = {m.id for m in sent}
    assert {f"legacy-message:{header.id}:{seq}" for seq in flat_steers} <= ids
    assert _starts_with(store.log_path(header), path)
    async with await JsonlPersistence(tmp_path).open(header.id, "read") as reader:
        events = list(await reader.read(0))
    assert _bytes(events[: len(original)]) == _bytes(original)
    new = events[len(original) :]
    assert [e.type for e in new][-1] == "turn/end"
    assert all(e.type != "steering/message" for e in new)
    assert all("trigger" not in e.to_wire()["data"] for e in new if e.type == "turn/start")
