"""Streaming parse throughput of OpenAICompatibleModel vs a raw httpx read of the same stream.

A local server (a separate process, so it does not share our GIL) answers every POST with the
same recorded-shaped Chat Completions stream: DeepSeek-style chunk objects (id, object, created,
model, system_fingerprint, choices[0].delta, logprobs, finish_reason), each event its own HTTP
chunk, as providers flush them. The answer is 4,000 reasoning deltas, 12,000 text deltas and a
tool call whose arguments arrive in 400 deltas, then the finish reason, usage and ``[DONE]``.

- raw: ``httpx.AsyncClient.stream`` + ``aiter_lines()``; ``json.loads`` of each ``data:`` line
  until ``[DONE]`` (the least a client can do to read the stream);
- ours: ``OpenAICompatibleModel.stream(request)`` consumed to its ``finish`` chunk (request body
  built from a ``ModelRequest``, SSE framing, chunk objects to validated ``StreamChunk``s, blocks
  assembled, usage mapped).

Both keep their connection alive across calls. Calls alternate between the two (alternating
which goes first) after warm-up; throughput is SSE events per second, medians of ROUNDS calls;
the bar is ours >= 0.8x raw. For information, a third side reads the same way but parses with
``pydantic_core.from_json`` (the parser ours uses), so the table also shows what ours costs
beyond a faster parser. Usage: ``python bench/bench_model_openai.py`` (or
``python -m nox -s bench -- model_openai``).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pydantic_core

from dsh_llm import FinishChunk, ModelRequest, ToolSchema, UserMessage
from dsh_model_openai import OpenAICompatibleModel

ROUNDS = int(os.environ.get("DSH_BENCH_ROUNDS", "15"))
WARMUP = 3
REASONING_DELTAS = 4_000
TEXT_DELTAS = 12_000
ARGUMENT_DELTAS = 400
BAR = 0.8

_WORDS = [
    *("the", "session", "log", "stores", "every", "event", "the", "agent", "emits", "so", "a"),
    *("resumed", "run", "rebuilds", "its", "request", "from", "disk", "alone", "model", "tool"),
    *("result", "call", "bash"),
]


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-5f0c9a4e-8b1d-4c3e-9f2a-7d6e5c4b3a21",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "deepseek-chat",
        "system_fingerprint": "fp_8802369eaa_prod0623_fp8_kvcache",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **extra,
    }


def _events() -> list[dict[str, Any]]:
    events = [_chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    for i in range(REASONING_DELTAS):
        events.append(_chunk({"content": None, "reasoning_content": " " + _WORDS[i % len(_WORDS)]}))
    for i in range(TEXT_DELTAS):
        events.append(_chunk({"content": " " + _WORDS[(i * 7) % len(_WORDS)]}))
    first = {"index": 0, "id": "call_0_9f8e7d6c", "type": "function"}
    events.append(
        _chunk({"tool_calls": [{**first, "function": {"name": "bash", "arguments": ""}}]})
    )
    for i in range(ARGUMENT_DELTAS):
        piece = '{"command": "' if i == 0 else ('"}' if i == ARGUMENT_DELTAS - 1 else "ls -la ")
        events.append(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    events.append(_chunk({"content": ""}, finish="tool_calls"))
    usage = {
        "prompt_tokens": 9000,
        "completion_tokens": 16400,
        "total_tokens": 25400,
        "prompt_tokens_details": {"cached_tokens": 8832},
        "prompt_cache_hit_tokens": 8832,
        "prompt_cache_miss_tokens": 168,
        "completion_tokens_details": {"reasoning_tokens": 4000},
    }
    events.append({**_chunk({}), "choices": [], "usage": usage})
    return events


def _body() -> bytes:
    """The chunked HTTP body: one HTTP chunk per SSE event, then the terminating chunk."""
    pieces = [f"data: {json.dumps(e, separators=(',', ':'))}\n\n".encode() for e in _events()]
    pieces.append(b"data: [DONE]\n\n")
    return b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces) + b"0\r\n\r\n"


EVENT_COUNT = len(_events())


def serve() -> None:
    """The server process: print the port, then answer every POST with the same stream."""
    body = _body()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


REQUEST = ModelRequest(
    provider="deepseek",
    model="deepseek-chat",
    system="You are a coding agent.",
    messages=[UserMessage.from_text("List the files and explain what you see.")],
    tools=[ToolSchema(name="bash", description="Run bash.", parameters={"type": "object"})],
)


async def _raw(client: httpx.AsyncClient, url: str, loads: Any = json.loads) -> float:
    payload = json.dumps({"model": "deepseek-chat", "messages": [], "stream": True}).encode()
    started = time.perf_counter()
    count = 0
    async with client.stream("POST", url, content=payload) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                data = line[6:]
                if data == "[DONE]":
                    break
                loads(data)
                count += 1
    elapsed = time.perf_counter() - started
    assert count == EVENT_COUNT, count
    return elapsed


async def _ours(model: OpenAICompatibleModel) -> tuple[float, int]:
    started = time.perf_counter()
    produced = 0
    last = None
    async for chunk in model.stream(REQUEST):
        produced += 1
        last = chunk
    elapsed = time.perf_counter() - started
    assert isinstance(last, FinishChunk), last
    assert last.reason.kind == "tool-calls", last
    return elapsed, produced


async def measure(base_url: str) -> tuple[list[float], list[float], list[float], int]:
    """(raw, ours, raw with from_json) call times in seconds, and ours' chunks per call."""
    url = f"{base_url}/chat/completions"
    raw: list[float] = []
    ours: list[float] = []
    fast: list[float] = []
    produced = 0
    async with (
        httpx.AsyncClient(trust_env=False) as client,
        OpenAICompatibleModel(base_url, "sk-bench", "deepseek-chat") as model,
    ):
        for _ in range(WARMUP):
            await _raw(client, url)
            await _ours(model)
        for round_number in range(ROUNDS):
            if round_number % 2:
                raw.append(await _raw(client, url))
                elapsed, produced = await _ours(model)
                ours.append(elapsed)
            else:
                elapsed, produced = await _ours(model)
                ours.append(elapsed)
                raw.append(await _raw(client, url))
            fast.append(await _raw(client, url, pydantic_core.from_json))
    return raw, ours, fast, produced


def main() -> int:
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        base_url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"
        raw, ours, fast, produced = asyncio.run(measure(base_url))
    finally:
        server.terminate()
        server.wait(10)
    raw_rate = EVENT_COUNT / statistics.median(raw)
    our_rate = EVENT_COUNT / statistics.median(ours)
    fast_rate = EVENT_COUNT / statistics.median(fast)
    ratio = our_rate / raw_rate
    verdict = "ok" if ratio >= BAR else "MISSED"
    print(
        f"bench_model_openai (python {sys.version.split()[0]}, median of {ROUNDS} calls after "
        f"{WARMUP} warm-up): one stream of {EVENT_COUNT} SSE events"
    )
    print(f"  raw httpx aiter_lines + json.loads   {raw_rate:10,.0f} events/s")
    print(
        f"  OpenAICompatibleModel.stream         {our_rate:10,.0f} events/s "
        f"({produced} StreamChunks per call)"
    )
    print(f"  raw with pydantic_core.from_json     {fast_rate:10,.0f} events/s (information)")
    print(f"  ratio (ours / raw): {ratio:.3f}x  bar >= {BAR}x  {verdict}")
    print(f"  ratio (ours / raw with from_json, information): {our_rate / fast_rate:.3f}x")
    return 0 if ratio >= BAR else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        raise SystemExit(main())
