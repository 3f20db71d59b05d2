"""The harness's own compaction-recovery log (fixtures/): our meter prices it as the harness did,
it satisfies the bracket invariants, and replaying its overflow through our Compactor logs the
same bracket the harness logged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh_agent import AgentOptions, RequestConfig, RequestError, Retry
from dsh_compaction import CompactionConfig, Compactor, TokenMeter, check_compaction_log
from dsh_llm import LlmFailure, Usage
from dsh_llm.testing import ScriptedModel, text_response
from dsh_session import Session, SessionEvent, decode_header_line, decode_rows
from support import FakeAgent

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("*.jsonl"))
SUMMARY = "The request established a durable compaction premise."


def load(path: Path, upto: int | None = None) -> tuple[Session, list[SessionEvent]]:
    lines = path.read_bytes()[:-1].split(b"\n")
    header, _inherited = decode_header_line(lines[0])
    events, _ = decode_rows(lines[1:], 0)
    session = Session(header, events if upto is None else events[:upto])
    return session, list(session.events)


def test_both_versions_are_here() -> None:
    assert [path.name.split("--")[-1] for path in FIXTURES] == [
        "aacab0cafd.jsonl",
        "b80290ea4e.jsonl",
    ]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem.split("--")[-1])
def test_the_meter_prices_the_prompt_as_the_harness_did(path: Path) -> None:
    session, events = load(path)
    logged = events[20].data["shadowedTokenCount"]  # the harness's price of seq 4 (266 / 264)
    before = TokenMeter().measure(Session(session.header, events[:19]))
    assert {node.seq: node.tokens for node in before.nodes}[4] == logged
    check_compaction_log(events)  # the old names read as the new ones: the same invariants


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem.split("--")[-1])
async def test_replaying_the_overflow_logs_the_bracket_the_harness_logged(path: Path) -> None:
    _, recorded = load(path)
    session, _ = load(path, upto=19)  # up to the failed attempt's finish chunk, inside step 2
    model = ScriptedModel([text_response(SUMMARY, usage=Usage(input_tokens=20, output_tokens=4))])
    compactor = Compactor(model, CompactionConfig(max_tokens=32))
    options = AgentOptions(provider="deepseek-official", model="deepseek-v4-flash")
    agent = FakeAgent(session, options=options, status="running")
    failure = LlmFailure(message="too long", code="CONTEXT_WINDOW_EXCEEDED")
    config = RequestConfig(provider="deepseek-official", model="deepseek-v4-flash")
    decision = await compactor._request_error(RequestError(agent, 1, 2, 1, failure, config))  # type: ignore[arg-type]
    assert isinstance(decision, Retry)
    ours = list(session.events)[19:]
    theirs = recorded[19:23]
    assert [e.type for e in ours] == [e.type for e in theirs]

    def shape(event: SessionEvent) -> dict[str, Any]:
        wire = dict(event.to_wire())
        wire.pop("time")
        data = dict(wire["data"])
        data.pop("compactionId", None)
        if event.type == "user/message":  # the preamble's wording is ours; the harness's newer
            # writer also gives user messages a role and an id, which format v0 leaves optional
            data = {"source": {k: v for k, v in data["source"].items() if k != "compactionId"}}
        wire["data"] = data
        return wire

    assert [shape(e) for e in ours] == [shape(e) for e in theirs]
    assert [list(e.data) for e in ours[:2]] == [list(e.data) for e in theirs[:2]]  # key order
    assert ours[3].data == {"compactionId": ours[0].data["compactionId"], "turn": 1}
    assert session.surface == (21, 13, 15)
    assert [m.role for m in session.derive_messages()] == ["user", "assistant", "user"]
    assert model.requests[0].max_tokens == 32
