"""The token meter (reference §1.2): block prices, the envelope, the usage anchor, signed deltas,
detached measurements, and malformed events refused the same way on every retry."""

from __future__ import annotations

import pytest

from dsh_compaction import (
    MeterError,
    TokenMeter,
    estimate_content,
    estimate_envelope,
    estimate_message,
    utf16_length,
)
from dsh_llm import UserMessage
from dsh_session import EpochHeader
from support import Log, new_session, text


def test_a_one_block_user_message_abcd_costs_nine() -> None:
    assert estimate_message(UserMessage.from_text("abcd")) == 9  # ceil(4/4) + 4 + 4
    assert estimate_message(UserMessage.from_text("abcde")) == 10  # the quarter rounds up
    assert TokenMeter.estimate_message(UserMessage.from_text("")) == 8


def test_lengths_are_utf16_code_units() -> None:
    assert utf16_length("abc") == 3
    assert utf16_length("é") == 1
    assert utf16_length("😀") == 2  # beyond the BMP: a surrogate pair in JavaScript
    assert estimate_content([text("😀😀")]) == 1 + 4  # 4 units → 1 token


def test_block_prices() -> None:
    call = {"type": "tool-call", "id": "c1", "name": "bash", "arguments": '{"command":"ls"}'}
    assert estimate_content([call]) == 1 + 4 + 4  # name 4 chars, arguments 16 chars
    reasoning = {"type": "reasoning", "text": "x" * 9}
    assert estimate_content([reasoning]) == 3 + 4
    result = {"type": "tool-result", "toolCallId": "c1", "content": [text("abcdefgh")]}
    assert estimate_content([result]) == (2 + 4) + 4  # the inner content, plus 4
    image = {"type": "image", "data": "QUJD", "mimeType": "image/png"}
    encoded = '{"type":"image","data":"QUJD","mimeType":"image/png"}'
    assert estimate_content([image]) == 4 + -(-len(encoded) // 4)


def test_the_envelope_prices_system_tools_and_prefix() -> None:
    tools = [{"name": "bash", "description": "run", "parameters": {"type": "object"}}]
    header = EpochHeader(config={"provider": "p", "model": "m"}, system="x" * 40, tools=tools)
    tools_json = '[{"name":"bash","description":"run","parameters":{"type":"object"}}]'
    assert estimate_envelope(header) == (10 + 4) + (-(-len(tools_json) // 4) + 4)
    prefix = [{"content": [text("abcd")], "source": {"kind": "plugin", "plugin": "x"}}]
    with_prefix = EpochHeader(config={"provider": "p", "model": "m"}, message_prefix=prefix)
    assert estimate_envelope(with_prefix) == 9
    assert estimate_envelope(None) == 0
    assert estimate_envelope(EpochHeader(config={"provider": "p", "model": "m"})) == 0


def test_an_empty_headerless_session_measures_nothing() -> None:
    measured = TokenMeter().measure(new_session())
    assert (measured.baseline.kind, measured.total_tokens, len(measured.nodes)) == ("none", 0, 0)


def test_without_an_anchor_the_whole_request_is_estimated() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.user("abcd")
    log.header(system="x" * 40)
    measured = TokenMeter().measure(log.session)
    assert measured.baseline.kind == "estimated"
    assert measured.surface_tokens == 9
    assert measured.total_tokens == 14 + 9
    assert measured.surface_delta_tokens == 0
    assert [(node.seq, node.tokens) for node in measured.nodes] == [(2, 9)]


def test_the_usage_baseline_counts_input_cache_and_output_but_not_reasoning() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.header()
    usage = {
        "inputTokens": 20,
        "outputTokens": 7,
        "cacheReadTokens": 3,
        "cacheWriteTokens": 4,
        "reasoningTokens": 6,
    }
    log.answer("ok", usage=usage)
    measured = TokenMeter().measure(log.session)
    assert measured.baseline.kind == "usage"
    assert measured.baseline.tokens == 34
    assert measured.baseline.usage == usage
    assert measured.total_tokens == 34  # the answer is inside the usage: no delta yet


def test_the_heuristic_wins_when_usage_undercuts_it() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.header(system="s" * 400)  # 104 tokens of envelope alone
    log.answer("ok", usage={"inputTokens": 1, "outputTokens": 1})
    measured = TokenMeter().measure(log.session)
    assert measured.baseline.kind == "estimated"
    assert measured.baseline.tokens == 104 + 9  # envelope + the answer (1 + 4 + 4)


def test_the_output_price_comes_from_the_cited_chunks() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.header(system="s" * 400)
    # the chunks carry a longer text than the durable message: the provider's own output counts
    long = log.chunk({"type": "block-end", "index": 0, "block": text("y" * 400)})
    log.session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "content": [text("ok")],
            "provenance": {"provider": "scripted", "model": "m"},
            "usage": {"inputTokens": 1, "outputTokens": 1},
        },
        source_event_seqs=[long],
    )
    measured = TokenMeter().measure(log.session)
    assert measured.baseline.tokens == 104 + (100 + 4 + 4)
    # an explicit empty list prices the output at 0
    other = Log()
    other.start_turn()
    other.start_step()
    other.header(system="s" * 400)
    other.session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "content": [text("ok")],
            "provenance": {"provider": "scripted", "model": "m"},
            "usage": {"inputTokens": 1, "outputTokens": 1},
        },
        source_event_seqs=[],
    )
    assert TokenMeter().measure(other.session).baseline.tokens == 104 + 4  # the 4 of the role


def test_a_delta_counts_what_the_surface_gained_since_the_anchor() -> None:
    log = Log()
    log.exchange("hello", "hi", usage={"inputTokens": 500, "outputTokens": 10})
    meter = TokenMeter()
    first = meter.measure(log.session)
    assert first.baseline.tokens == 510
    assert (
        first.surface_delta_tokens == first.surface_tokens - 9
    )  # the prompt entered after step/start
    log.start_turn()
    log.start_step()
    log.user("abcd" * 10)
    after = meter.measure(log.session)
    assert after.surface_delta_tokens == first.surface_delta_tokens + 18
    assert after.total_tokens == 510 + after.surface_delta_tokens


def test_only_the_latest_anchor_counts() -> None:
    log = Log()
    log.exchange("a", "b", usage={"inputTokens": 500, "outputTokens": 10})
    log.exchange("c", "d", usage={"inputTokens": 700, "outputTokens": 20})
    assert TokenMeter().measure(log.session).baseline.tokens == 720


def test_any_envelope_change_invalidates_the_usage_anchor() -> None:
    log = Log()
    log.exchange("a", "b", usage={"inputTokens": 500, "outputTokens": 10})
    meter = TokenMeter()
    assert meter.measure(log.session).baseline.kind == "usage"
    log.header(reason="resume")  # the same header again: the anchor still holds
    assert meter.measure(log.session).baseline.kind == "usage"
    log.header(system="new system", reason="change")
    changed = meter.measure(log.session)
    assert changed.baseline.kind == "estimated"
    assert (
        changed.total_tokens
        == estimate_envelope(log.session.request_header) + changed.surface_tokens
    )


def test_a_header_override_measures_another_envelope_and_leaves_the_surface() -> None:
    log = Log()
    log.exchange("a", "b", usage={"inputTokens": 500, "outputTokens": 10})
    meter = TokenMeter()
    other = EpochHeader(config={"provider": "scripted", "model": "other"}, system="x" * 40)
    overridden = meter.measure(log.session, other)
    assert overridden.baseline.kind == "estimated"
    assert overridden.total_tokens == 14 + overridden.surface_tokens
    assert meter.measure(log.session).baseline.kind == "usage"
    same = EpochHeader(config={"provider": "scripted", "model": "m"})
    assert meter.measure(log.session, same).baseline.kind == "usage"


def test_a_replace_folds_a_signed_delta() -> None:
    log = Log()
    log.exchange("x" * 400, "y" * 400, usage={"inputTokens": 1000, "outputTokens": 100})
    meter = TokenMeter()
    before = meter.measure(log.session)
    log.start_turn()
    prompt = log.session.surface[0]
    start = log.session.append("compaction/start", {"compactionId": "c", "turn": 2})
    log.session.append(
        "user/message",
        {
            "content": [text("short")],
            "source": {"kind": "plugin", "plugin": "compact", "compactionId": "c"},
        },
        surface_op={"op": "replace", "start": prompt, "end": prompt},
        source_event_seqs=[start.seq, prompt],
    )
    after = meter.measure(log.session)
    assert after.surface_tokens == before.surface_tokens - 108 + 10
    assert after.surface_delta_tokens == before.surface_delta_tokens - 98  # negative move
    assert after.baseline == before.baseline
    assert [node.seq for node in after.nodes] == list(log.session.surface)


def test_measurements_are_detached_snapshots() -> None:
    log = Log()
    log.exchange("a", "b")
    meter = TokenMeter()
    first = meter.measure(log.session)
    nodes = list(first.nodes)
    log.start_turn()
    log.start_step()
    log.user("more")
    prompt = log.session.surface[0]
    start = log.session.append("compaction/start", {"compactionId": "c", "turn": 2})
    log.session.append(
        "user/message",
        {
            "content": [text("s")],
            "source": {"kind": "plugin", "plugin": "compact", "compactionId": "c"},
        },
        surface_op={"op": "replace", "start": prompt, "end": prompt},
        source_event_seqs=[start.seq, prompt],
    )
    assert list(first.nodes) == nodes
    assert len(first.nodes) == 2
    assert first.nodes[-1] == nodes[-1]
    with pytest.raises(IndexError):
        first.nodes[2]
    with pytest.raises(AttributeError):
        first.total_tokens = 0  # type: ignore[misc]


def test_tool_balance_is_recorded_per_node() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.user("go")
    log.header()
    log.answer("", calls=[("c1", "bash", {}), ("c2", "bash", {})])
    log.result("c1", [text("one")])
    log.result("c2", [text("two")])
    log.end_step()
    assert [node.tool_balance for node in TokenMeter().measure(log.session).nodes] == [0, 2, -1, -1]


def test_a_malformed_event_fails_the_same_way_on_every_retry() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.session.append("step/start", {"turn": 1, "step": 2})  # a step opens inside a step
    meter = TokenMeter()
    errors = []
    for _ in range(2):
        with pytest.raises(MeterError) as caught:
            meter.measure(log.session)
        errors.append((caught.value.seq, caught.value.message))
    assert errors[0] == errors[1] == (2, "a step opens while another is open")


def test_an_answer_citing_foreign_chunks_is_refused() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.header()
    prompt = log.user("not a chunk")
    log.session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "content": [text("ok")],
            "provenance": {"provider": "scripted", "model": "m"},
            "usage": {"inputTokens": 1, "outputTokens": 1},
        },
        source_event_seqs=[prompt],
    )
    with pytest.raises(MeterError, match=r"seq 4.*not an assistant/chunk"):
        TokenMeter().measure(log.session)


def test_the_fold_is_incremental() -> None:
    log = Log()
    meter = TokenMeter()
    for index in range(50):
        log.exchange(f"prompt {index}", f"answer {index}")
        measured = meter.measure(log.session)
        assert measured.log_revision == log.session.next_seq
    assert len(measured.nodes) == 100


def test_a_node_whose_content_is_not_blocks_is_refused_naming_it() -> None:
    log = Log()
    log.start_turn()
    log.session.append("user/message", {"content": ["not a block"], "source": {"kind": "user"}})
    with pytest.raises(MeterError, match=r"seq 1: user/message content is not a list of blocks"):
        TokenMeter().measure(log.session)


def test_an_anchor_holds_again_when_the_header_changes_back() -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.user("hi")
    log.header(system="A")
    log.answer("ok", usage={"inputTokens": 5000, "outputTokens": 10})
    log.end_step()
    meter = TokenMeter()
    anchored = meter.measure(log.session)
    assert anchored.baseline.kind == "usage"
    log.header(system="B", reason="change")
    assert meter.measure(log.session).baseline.kind == "estimated"
    log.header(system="A", reason="change")
    back = meter.measure(log.session)
    assert back.baseline == anchored.baseline  # the reference: equal headers, not equal versions
    assert back.total_tokens == anchored.total_tokens
    assert meter.measure(log.session, log.session.request_header) == back


@pytest.mark.parametrize(
    "block",
    [
        {"type": "text", "text": 5},
        {"type": "reasoning", "text": ["x"]},
        {"type": "tool-call", "id": "c", "name": "x", "arguments": {"a": 1}},
        {"type": "tool-call", "id": "c", "name": 7, "arguments": "{}"},
        {"type": "tool-result", "toolCallId": "c", "content": [{"type": "text", "text": None}]},
        "not a block",
    ],
)
def test_a_block_field_of_the_wrong_type_is_a_meter_error_naming_the_seq(block: object) -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    seq = log.session.append("user/message", {"content": [block], "source": {"kind": "user"}}).seq
    for _ in range(2):  # the same way on every retry
        with pytest.raises(MeterError, match=f"seq {seq}"):
            TokenMeter().measure(log.session)


@pytest.mark.parametrize(
    "chunk",
    [
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": 5}},
        {"type": "text-delta", "index": 0, "text": 7},
        {"type": "tool-call-delta", "index": 0, "name": "x", "argumentsDelta": {"a": 1}},
    ],
)
def test_a_cited_chunk_of_the_wrong_shape_is_a_meter_error_naming_the_message(
    chunk: object,
) -> None:
    log = Log()
    log.start_turn()
    log.start_step()
    log.header()
    cited = log.session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": chunk}).seq
    message = log.session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "content": [text("ok")],
            "provenance": {"provider": "scripted", "model": "m"},
            "usage": {"inputTokens": 1, "outputTokens": 1},
        },
        source_event_seqs=[cited],
    ).seq
    for _ in range(2):
        with pytest.raises(MeterError, match=f"seq {message}"):
            TokenMeter().measure(log.session)
