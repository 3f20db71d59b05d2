"""The summary call (reference §1.7): what it sends, and which answers it refuses."""

from __future__ import annotations

import pytest

from dsh_compaction import (
    CHECKPOINT_CLOSE,
    CHECKPOINT_OPEN,
    INSTRUCTION_PLUGIN,
    SUMMARY_INSTRUCTION,
    SummaryFailure,
    SummaryRequest,
    checkpoint_content,
    model_summarizer,
)
from dsh_llm import (
    BlockEndChunk,
    FinishChunk,
    FinishReason,
    ImageBlock,
    LlmFailure,
    ToolSchema,
    UserMessage,
)
from dsh_llm.testing import ScriptedModel, text_response

TOOLS = (ToolSchema(name="bash", description="run", parameters={"type": "object"}),)


def request(**fields: object) -> SummaryRequest:
    values: dict[str, object] = {
        "session_id": "s",
        "provider": "p",
        "model": "m",
        "system": "You are careful.",
        "tools": TOOLS,
        "prefix": (UserMessage.from_text("project notes"),),
        "messages": (UserMessage.from_text("do the thing"),),
        "max_tokens": 321,
    }
    values.update(fields)
    return SummaryRequest(**values)  # type: ignore[arg-type]


async def test_the_call_reuses_system_tools_and_prefix_and_asks_last() -> None:
    model = ScriptedModel([text_response("## 1. Primary Request and Intent\n- x", reasoning="hmm")])
    summary = await model_summarizer(model)(request())
    (sent,) = model.requests
    assert (sent.provider, sent.model, sent.system, sent.max_tokens) == (
        "p",
        "m",
        "You are careful.",
        321,
    )
    assert sent.tools == list(TOOLS)
    assert [m.content[0].text for m in sent.messages[:2]] == ["project notes", "do the thing"]  # type: ignore[union-attr]
    last = sent.messages[-1]
    assert last.source.plugin == INSTRUCTION_PLUGIN  # type: ignore[union-attr]
    assert last.content[0].text == SUMMARY_INSTRUCTION  # type: ignore[union-attr]
    for heading in (
        "Primary Request and Intent",
        "Key Technical Concepts",
        "Files and Code",
        "Errors and Fixes",
        "Pending Jobs",
        "Current Work",
        "Next Step",
        "Critical Context",
    ):
        assert heading in SUMMARY_INSTRUCTION
    assert summary.blocks == ({"type": "text", "text": "## 1. Primary Request and Intent\n- x"},)
    assert summary.raw_output is not None
    assert summary.raw_output[0]["type"] == "reasoning"
    assert (summary.provider, summary.model, summary.max_tokens) == ("p", "m", 321)
    assert summary.llm_stream_call is True
    assert summary.usage == {"inputTokens": 10, "outputTokens": 36}


def _finish(kind: str, failure: LlmFailure | None = None) -> list[object]:
    return [FinishChunk(reason=FinishReason(kind=kind, error=failure))]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("script", "code"),
    [
        (_finish("error", LlmFailure(message="down", code="SERVER")), "SERVER"),
        (_finish("aborted"), "ABORTED"),
        (_finish("max-tokens"), "MAX_TOKENS"),
        (text_response("   \n"), "EMPTY_SUMMARY"),
        (text_response("", reasoning="only thoughts"), "EMPTY_SUMMARY"),
        (
            [
                BlockEndChunk(index=0, block=ImageBlock(data="QUJD", mime_type="image/png")),
                *_finish("stop"),
            ],
            "UNSUPPORTED_CONTENT",
        ),
        ([], "NO_FINISH"),
    ],
)
async def test_unusable_answers_are_refused(script: list[object], code: str) -> None:
    model = ScriptedModel([script])  # type: ignore[list-item]
    with pytest.raises(SummaryFailure) as caught:
        await model_summarizer(model)(request())
    assert caught.value.code == code


def test_the_checkpoint_wraps_the_summary_in_tags() -> None:
    content = checkpoint_content([{"type": "text", "text": "- a"}, {"type": "text", "text": "- b"}])
    assert content[0]["text"].endswith("\n\n" + CHECKPOINT_OPEN)
    assert "do not acknowledge it" in content[0]["text"]
    assert content[1:3] == [{"type": "text", "text": "- a"}, {"type": "text", "text": "- b"}]
    assert content[-1] == {"type": "text", "text": CHECKPOINT_CLOSE}
