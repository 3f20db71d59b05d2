"""Chat Completions chunk objects in, a well-formed ``StreamChunk`` sequence out."""

from __future__ import annotations

import json
import re
import secrets
from typing import Any, Literal

from dsh_llm import (
    BlockEndChunk,
    BlockStartChunk,
    FailureCode,
    FinishChunk,
    FinishReason,
    LlmFailure,
    ReasoningBlock,
    ReasoningDeltaChunk,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    ToolCallBlock,
    ToolCallDeltaChunk,
    Usage,
    UsageChunk,
)
from dsh_model_openai._failures import StreamFailure, error_event_failure

__all__ = ["Translator", "map_usage"]

_NOTHING: list[StreamChunk] = []


_ProseKind = Literal["text", "reasoning"]


class _Prose:
    """An open text or reasoning block."""

    __slots__ = ("index", "kind", "parts")

    def __init__(self, kind: _ProseKind, index: int) -> None:
        self.kind = kind
        self.index = index
        self.parts: list[str] = []

    def end(self) -> BlockEndChunk:
        text = "".join(self.parts)
        block = TextBlock(text=text) if self.kind == "text" else ReasoningBlock(text=text)
        return BlockEndChunk(index=self.index, block=block)


class _Call:
    """An open tool-call block, assembled from the deltas of one provider ``index``."""

    __slots__ = ("generated_id", "id", "index", "name", "parts")

    def __init__(self, index: int, call_id: str | None, name: str) -> None:
        self.index = index
        # A server that sends no id (or sends it only in a later delta) gets one of ours, kept
        # for the whole call: the deltas already delivered carry it.
        self.generated_id = call_id is None
        self.id = call_id or f"call_{secrets.token_hex(12)}"
        self.name = name
        self.parts: list[str] = []

    def continued_by(self, call_id: str | None) -> bool:
        """Whether a delta with ``call_id`` continues this call: no id, the same id, or the
        first id a server sends late for a call it began without one."""
        if not call_id or call_id == self.id:
            return True
        if self.generated_id:
            self.generated_id = False  # only the first late id is taken as this call's
            return True
        return False

    def end(self) -> BlockEndChunk:
        block = ToolCallBlock(id=self.id, name=self.name, arguments="".join(self.parts))
        return BlockEndChunk(index=self.index, block=block)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _details(usage: dict[str, Any], key: str) -> dict[str, Any]:
    value = usage.get(key)
    return value if isinstance(value, dict) else {}


def map_usage(usage: dict[str, Any]) -> Usage | None:
    """DSH usage from a Chat Completions ``usage`` object, ``None`` when it has no counts.

    DSH counts are disjoint: ``input_tokens`` excludes the cache reads (and writes) that
    ``prompt_tokens`` includes. Cache reads come from ``prompt_tokens_details.cached_tokens``
    (OpenAI, vLLM) or ``prompt_cache_hit_tokens`` (DeepSeek), cache writes from
    ``prompt_tokens_details.cache_write_tokens``, reasoning from
    ``completion_tokens_details.reasoning_tokens``; each is set only when reported.
    """
    prompt = _count(usage.get("prompt_tokens"))
    completion = _count(usage.get("completion_tokens"))
    if prompt is None or completion is None:
        return None
    prompt_details = _details(usage, "prompt_tokens_details")
    cache_read = _count(prompt_details.get("cached_tokens"))
    if cache_read is None:
        cache_read = _count(usage.get("prompt_cache_hit_tokens"))
    cache_write = _count(prompt_details.get("cache_write_tokens"))
    reasoning = _count(_details(usage, "completion_tokens_details").get("reasoning_tokens"))
    fields: dict[str, int] = {
        "input_tokens": max(prompt - (cache_read or 0) - (cache_write or 0), 0),
        "output_tokens": completion,
    }
    for key, value in (
        ("cache_read_tokens", cache_read),
        ("cache_write_tokens", cache_write),
        ("reasoning_tokens", reasoning),
    ):
        if value is not None:
            fields[key] = value
    return Usage(**fields)


def _error(code: str, message: str) -> FinishReason:
    return FinishReason(kind="error", error=LlmFailure(message=message, code=code))


class Translator:
    """The state of one answer: which blocks are open, the finish reason, the latest usage.

    ``feed`` takes each parsed event and returns the chunks it produces; ``end`` the closing
    chunks (remaining ``block-end``s, ``usage``, ``finish``) once the stream is over; ``fail`` the
    closing chunks of a stream that failed. Text and reasoning blocks take indexes in arrival
    order, and a switch between them (or the first tool call) ends the open one; tool-call
    blocks stay open until the finish reason, since parallel calls may interleave.
    """

    def __init__(self, where: str) -> None:
        self._where = where
        self._next_index = 0
        self._prose: _Prose | None = None
        self._calls: dict[int, _Call] = {}  # provider index -> the call it continues
        self._open_calls: list[_Call] = []
        self._last_call: _Call | None = None
        self._untagged = 0
        self._any_block = False
        self._any_call = False
        self._finish: str | None = None
        self._usage: Usage | None = None

    @property
    def finish_seen(self) -> bool:
        """Whether the provider sent a finish reason (the answer is complete)."""
        return self._finish is not None

    @property
    def has_content(self) -> bool:
        """Whether any block (text, reasoning, tool call) has started."""
        return self._any_block

    def _take_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        self._any_block = True
        return index

    def _prose_delta(self, kind: _ProseKind, text: str) -> list[StreamChunk]:
        prose = self._prose
        out: list[StreamChunk] = []
        if prose is None or prose.kind != kind:
            if prose is not None:
                out.append(prose.end())
            prose = self._prose = _Prose(kind, self._take_index())
            out.append(BlockStartChunk(index=prose.index, block_type=kind))
        prose.parts.append(text)
        if kind == "text":
            out.append(TextDeltaChunk(index=prose.index, text=text))
        else:
            out.append(ReasoningDeltaChunk(index=prose.index, text=text))
        return out

    def _call_for(self, position: object, call_id: str | None) -> _Call | None:
        """The open call a delta continues, or ``None`` when it starts a new one."""
        if isinstance(position, int) and not isinstance(position, bool):
            call = self._calls.get(position)
            # Some servers number every call 0; a different id is a new call all the same.
            return call if call is not None and call.continued_by(call_id) else None
        last = self._last_call
        return last if last is not None and last.continued_by(call_id) else None

    def _tool_deltas(self, deltas: list[Any]) -> list[StreamChunk]:
        out: list[StreamChunk] = []
        for delta in deltas:
            if not isinstance(delta, dict):
                continue
            function = delta.get("function")
            function = function if isinstance(function, dict) else {}
            raw_id, name = delta.get("id"), function.get("name")
            arguments = function.get("arguments")
            call_id = raw_id if isinstance(raw_id, str) and raw_id else None
            name = name if isinstance(name, str) and name else None
            if isinstance(arguments, dict | list):
                arguments = json.dumps(arguments, ensure_ascii=False)
            arguments = arguments if isinstance(arguments, str) else ""
            position = delta.get("index")
            call = self._call_for(position, call_id)
            if call is None:
                if self._prose is not None:
                    out.append(self._prose.end())
                    self._prose = None
                call = _Call(self._take_index(), call_id, "")
                if not isinstance(position, int) or isinstance(position, bool):
                    position = -1 - self._untagged
                    self._untagged += 1
                self._calls[position] = call
                self._open_calls.append(call)
                self._last_call = call
                self._any_call = True
                out.append(BlockStartChunk(index=call.index, block_type="tool-call"))
                call.name = name or ""
                call.parts.append(arguments)
                out.append(
                    ToolCallDeltaChunk(
                        index=call.index, id=call.id, name=name, arguments_delta=arguments
                    )
                )
                continue
            self._last_call = call
            if name and not call.name:
                call.name = name
            if arguments:
                call.parts.append(arguments)
                out.append(
                    ToolCallDeltaChunk(
                        index=call.index,
                        id=call.id,
                        name=call.name or None,
                        arguments_delta=arguments,
                    )
                )
        return out

    def _close_blocks(self) -> list[StreamChunk]:
        ends = [call.end() for call in self._open_calls]
        if self._prose is not None:
            ends.append(self._prose.end())
            self._prose = None
        self._calls.clear()
        self._open_calls.clear()
        self._last_call = None
        ends.sort(key=lambda chunk: chunk.index)
        return list(ends)

    def feed(self, event: Any) -> list[StreamChunk]:
        """The chunks one parsed event produces (raises ``StreamFailure`` for an error event)."""
        if not isinstance(event, dict):
            return _NOTHING
        out: list[StreamChunk] = _NOTHING
        choices = event.get("choices")
        if choices and isinstance(choices, list):
            choice = choices[0]
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                delta = choice.get("delta")
                if isinstance(delta, dict):
                    reasoning = delta.get("reasoning_content")
                    if reasoning is None:
                        reasoning = delta.get("reasoning")  # vLLM, OpenRouter, Ollama
                    if reasoning and isinstance(reasoning, str):
                        out = self._prose_delta("reasoning", reasoning)
                    content = delta.get("content")
                    if content and isinstance(content, str):
                        more = self._prose_delta("text", content)
                        out = more if out is _NOTHING else out + more
                    tool_calls = delta.get("tool_calls")
                    if tool_calls and isinstance(tool_calls, list):
                        more = self._tool_deltas(tool_calls)
                        out = more if out is _NOTHING else out + more
                reason = choice.get("finish_reason")
                if reason and isinstance(reason, str):
                    self._finish = reason
                    more = self._close_blocks()
                    out = more if out is _NOTHING else out + more
        usage = event.get("usage")
        if usage and isinstance(usage, dict):
            self._usage = map_usage(usage) or self._usage
        if event.get("error"):
            raise StreamFailure(error_event_failure(event["error"], self._where))
        return out

    def whole(self, answer: Any) -> list[StreamChunk]:
        """Every chunk of a non-streamed answer (a server that ignored ``stream: true``)."""
        if not isinstance(answer, dict):
            return self.end()
        if answer.get("error"):
            raise StreamFailure(error_event_failure(answer["error"], self._where))
        event: dict[str, Any] = {"usage": answer.get("usage")}
        choices = answer.get("choices")
        if choices and isinstance(choices, list) and isinstance(choices[0], dict):
            message = choices[0].get("message")
            delta = dict(message) if isinstance(message, dict) else {}
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                delta["tool_calls"] = [
                    {**call, "index": position}
                    for position, call in enumerate(calls)
                    if isinstance(call, dict)
                ]
            finish = choices[0].get("finish_reason")
            event["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return self.feed(event) + self.end()

    def _finish_reason(self) -> FinishReason:
        reason = self._finish
        if reason == "length":
            return FinishReason(kind="max-tokens")
        if self._any_call and reason in (None, "stop", "tool_calls", "function_call"):
            return FinishReason(kind="tool-calls")
        if reason in (None, "stop", "tool_calls", "function_call"):
            if not self._any_block:
                return _error(FailureCode.EMPTY_RESPONSE, f"{self._where} answered with no content")
            return FinishReason(kind="stop")
        if reason == "content_filter":
            return _error(
                FailureCode.CONTENT_FILTER, f"{self._where} stopped the answer: content_filter"
            )
        if reason == "insufficient_system_resource":
            message = f"{self._where} stopped the answer: insufficient_system_resource"
            return _error(FailureCode.SERVER, message)
        code = re.sub(r"[^A-Z0-9]+", "_", reason.upper()).strip("_") or FailureCode.UNKNOWN
        return _error(code, f"{self._where} stopped the answer: {reason}")

    def _tail(self, reason: FinishReason) -> list[StreamChunk]:
        out: list[StreamChunk] = []
        if self._usage is not None:
            out.append(UsageChunk(usage=self._usage))
        out.append(FinishChunk(reason=reason))
        return out

    def end(self) -> list[StreamChunk]:
        """The closing chunks of a complete answer (``[DONE]``, or a finish reason seen)."""
        return self._close_blocks() + self._tail(self._finish_reason())

    def fail(self, failure: LlmFailure) -> list[StreamChunk]:
        """The closing chunks of a failed stream: ``usage`` if any, then ``finish{error}``.

        Open blocks stay open (no ``block-end``): they never reached a final form, and
        ``assemble_message`` rebuilds what arrived from their deltas.
        """
        return self._tail(FinishReason(kind="error", error=failure))
