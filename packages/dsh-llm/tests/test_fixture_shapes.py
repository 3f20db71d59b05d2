"""Every message, chunk and usage shape of the v0 fixture logs validates and writes back its keys.

The snippets are copied from shared/fixtures/upstream-v0/ (the tests do not read that directory).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter

from dsh_llm import (
    CONTENT_BLOCK_ADAPTER,
    MESSAGE_ADAPTER,
    STREAM_CHUNK_ADAPTER,
    AssistantMessage,
    BlockEndChunk,
    FinishChunk,
    PluginSource,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolResultMessage,
    ToolSchema,
    Usage,
    UsageChunk,
    UserMessage,
    UserSource,
)

CHUNKS = [
    '{"type":"block-start","index":0,"blockType":"reasoning"}',
    '{"type":"block-start","index":1,"blockType":"tool-call"}',
    '{"type":"block-start","index":1,"blockType":"text"}',
    '{"type":"text-delta","index":1,"text":"D"}',
    '{"type":"reasoning-delta","index":0,"text":"Run the failing pwsh command."}',
    '{"type":"tool-call-delta","index":1,"id":"call_pwsh_fail_0001","name":"pwsh",'
    '"argumentsDelta":"{\\"command\\": \\"Get-Item missing.txt\\", \\"description\\": '
    '\\"Fail deliberately\\"}"}',
    '{"type":"block-end","index":0,"block":{"type":"reasoning","text":"The user wants me to run '
    'a simple bash command and reply with \\"DONE\\"."}}',
    '{"type":"block-end","index":1,"block":{"type":"tool-call",'
    '"id":"call_00_BYXlxjFaalMg95YVqEeF2495","name":"bash","arguments":"{\\"command\\": '
    '\\"echo WEB_E2E_OK\\", \\"description\\": \\"Echo the test string\\"}"}}',
    '{"type":"block-end","index":1,"block":{"type":"text","text":"DONE"}}',
    '{"type":"usage","usage":{"inputTokens":122,"outputTokens":85,"cacheReadTokens":7680,'
    '"reasoningTokens":17}}',
    '{"type":"usage","usage":{"inputTokens":10,"outputTokens":4}}',
    '{"type":"finish","reason":{"kind":"tool-calls"}}',
    '{"type":"finish","reason":{"kind":"stop"}}',
]

MESSAGES = [
    # user/message data, v0 short form
    '{"content":[{"type":"text","text":"Reply with the single word LIGHTHOUSE and stop."}],'
    '"source":{"kind":"user","rpcId":"rpc-1"}}',
    # user/message data, full form with role and id
    '{"content":[{"type":"text","text":"Begin your reply."}],"source":{"kind":"user",'
    '"rpcId":"rpc-1"},"role":"user","id":"4dcaa766-7ea2-4c6a-84cb-0d6ab53b5fb4"}',
    # injected plugin context
    '{"content":[{"type":"text","text":"Current runtime context."}],"source":{"kind":"plugin",'
    '"plugin":"@deepseek-ai/dsh-system-prompt"},"role":"user",'
    '"id":"60b8851a-888c-4d7e-9513-7d845f8d769b"}',
    # request/header messagePrefix entry
    '{"role":"user","content":[{"type":"text","text":"<skills>\\n- review: Review a change.\\n'
    '</skills>"}],"source":{"kind":"plugin","plugin":"@deepseek-ai/dsh-skills","form":"snapshot"}}',
    # assistant/message data.message
    '{"role":"assistant","content":[{"type":"reasoning","text":"The user wants me to begin."},'
    '{"type":"text","text":"Reading the workspace now."},{"type":"tool-call",'
    '"id":"call_00_1yZGg4XTqe0N5r1rnDLx5082","name":"bash","arguments":"{\\"command\\": '
    '\\"echo alpha\\", \\"description\\": \\"Print alpha to stdout\\"}"}],"source":{"kind":"model",'
    '"provider":"deepseek-official","model":"deepseek-v4-flash"},'
    '"id":"73708391-4b5f-429e-b71c-ef2114244a95"}',
    # tool/result data.message
    '{"source":{"kind":"tool","callId":"call_00_1yZGg4XTqe0N5r1rnDLx5082"},"content":[{"type":'
    '"tool-result","toolCallId":"call_00_1yZGg4XTqe0N5r1rnDLx5082","content":[{"type":"text",'
    '"text":"alpha\\n"}],"isError":false}],"role":"user",'
    '"id":"8b7ad694-b19e-4728-a804-eef9f53820b9"}',
]

BLOCKS = [
    '{"type":"text","text":"WEB_E2E_OK\\n"}',
    '{"type":"reasoning","text":"The command executed successfully."}',
    '{"type":"tool-call","id":"call_web_search","name":"web_search",'
    '"arguments":"{\\"queries\\":[\\"DeepSeek Harness snapshot search\\"]}"}',
]

USAGES = [
    '{"inputTokens":7788,"outputTokens":109,"cacheReadTokens":0,"reasoningTokens":42}',
    '{"inputTokens":10,"outputTokens":5}',
]

TOOL_SCHEMA = (
    '{"name":"bash","description":"Run a bash command.","parameters":{"type":"object",'
    '"properties":{"command":{"type":"string"},"description":{"type":"string"}},'
    '"required":["command","description"]}}'
)


def _same_keys(adapter: TypeAdapter[Any], raw: str) -> None:
    value = adapter.validate_json(raw)
    assert value.to_wire() == json.loads(raw)
    assert adapter.validate_python(json.loads(raw)) == value


@pytest.mark.parametrize("raw", CHUNKS)
def test_fixture_chunk_validates_and_writes_back_the_same_keys(raw: str) -> None:
    _same_keys(STREAM_CHUNK_ADAPTER, raw)


@pytest.mark.parametrize("raw", MESSAGES)
def test_fixture_message_validates_and_writes_back_the_same_keys(raw: str) -> None:
    _same_keys(MESSAGE_ADAPTER, raw)


@pytest.mark.parametrize("raw", BLOCKS)
def test_fixture_content_block_validates_and_writes_back_the_same_keys(raw: str) -> None:
    _same_keys(CONTENT_BLOCK_ADAPTER, raw)


@pytest.mark.parametrize("raw", USAGES)
def test_fixture_usage_validates_and_writes_back_the_same_keys(raw: str) -> None:
    assert Usage.model_validate_json(raw).to_wire() == json.loads(raw)


def test_fixture_tool_schema_validates_and_writes_back_the_same_keys() -> None:
    assert ToolSchema.model_validate_json(TOOL_SCHEMA).to_wire() == json.loads(TOOL_SCHEMA)


def test_wire_json_of_a_chunk_is_compact_and_in_the_writers_key_order() -> None:
    for raw in CHUNKS:
        assert STREAM_CHUNK_ADAPTER.validate_json(raw).to_wire_json() == raw


def test_short_form_user_message_validates_as_a_user_message() -> None:
    message = MESSAGE_ADAPTER.validate_json(MESSAGES[0])
    assert isinstance(message, UserMessage)
    assert isinstance(message.source, UserSource)


def test_user_source_keeps_the_rpc_id_extra_key() -> None:
    message = MESSAGE_ADAPTER.validate_json(MESSAGES[0])
    assert message.source.model_extra == {"rpcId": "rpc-1"}


def test_plugin_source_reads_plugin_and_form() -> None:
    message = MESSAGE_ADAPTER.validate_json(MESSAGES[3])
    assert message.source == PluginSource(plugin="@deepseek-ai/dsh-skills", form="snapshot")


def test_assistant_fixture_message_exposes_its_tool_calls() -> None:
    message = MESSAGE_ADAPTER.validate_json(MESSAGES[4])
    assert isinstance(message, AssistantMessage)
    assert [call.name for call in message.tool_calls] == ["bash"]
    assert message.text == "Reading the workspace now."


def test_tool_result_fixture_message_is_a_tool_result_message() -> None:
    message = MESSAGE_ADAPTER.validate_json(MESSAGES[5])
    assert isinstance(message, ToolResultMessage)
    assert message.result.tool_call_id == message.source.call_id
    assert message.result.is_error is False


def test_tool_call_arguments_stay_the_raw_json_text() -> None:
    chunk = STREAM_CHUNK_ADAPTER.validate_json(CHUNKS[7])
    assert isinstance(chunk, BlockEndChunk)
    assert isinstance(chunk.block, ToolCallBlock)
    assert (
        chunk.block.arguments
        == '{"command": "echo WEB_E2E_OK", "description": "Echo the test string"}'
    )


def test_tool_call_delta_reads_camel_case_arguments_delta() -> None:
    chunk = STREAM_CHUNK_ADAPTER.validate_json(CHUNKS[5])
    assert isinstance(chunk, ToolCallDeltaChunk)
    assert chunk.arguments_delta.startswith('{"command"')


def test_usage_chunk_absent_optional_counts_are_none() -> None:
    chunk = STREAM_CHUNK_ADAPTER.validate_json(CHUNKS[10])
    assert isinstance(chunk, UsageChunk)
    assert chunk.usage.cache_read_tokens is None
    assert chunk.usage.reasoning_tokens is None


def test_finish_chunk_reads_its_reason_kind() -> None:
    chunk = STREAM_CHUNK_ADAPTER.validate_json(CHUNKS[11])
    assert isinstance(chunk, FinishChunk)
    assert chunk.reason.kind == "tool-calls"
    assert chunk.reason.error is None
