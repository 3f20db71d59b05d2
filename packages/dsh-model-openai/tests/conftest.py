"""A scripted OpenAI-compatible server on 127.0.0.1 for the dsh-model-openai tests.

Real sockets and real HTTP/1.1 (a ``ThreadingHTTPServer`` on an ephemeral port), so the model's
httpx client is exercised as it is against a provider. Each test queues ``Reply``s; each POST
takes the next one, streams its pieces as HTTP chunks, and records what it received. Nothing
here touches the network beyond the loopback interface.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from dsh_llm import (
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    ReasoningDeltaChunk,
    StreamChunk,
    TextDeltaChunk,
    ToolCallDeltaChunk,
)

API_KEY = "sk-test-4f1c9e0b7a2d4c6e8f00112233445566"
HANG_LIMIT = 30.0  # a hanging reply gives up after this long, so a broken test cannot wedge


@dataclass(frozen=True)
class Hang:
    """A body piece: send nothing more until the client closes the connection."""


@dataclass(frozen=True)
class Gate:
    """A body piece: wait until ``event`` is set (or the client goes away)."""

    event: threading.Event


Piece = bytes | Hang | Gate


@dataclass
class Reply:
    """One scripted answer: status, headers, body pieces (one HTTP chunk each).

    ``cut`` closes the socket after the pieces without the terminating chunk (a connection lost
    mid-body); ``hang_before_headers`` sends nothing at all until the client gives up.
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    pieces: list[Piece] = field(default_factory=list)
    content_type: str = "text/event-stream"
    cut: bool = False
    hang_before_headers: bool = False


@dataclass
class Received:
    """One request as the server read it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    client_port: int

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def event(payload: dict[str, Any] | str) -> bytes:
    """One SSE event: ``data: <json>`` and a blank line."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def chunk(
    *,
    content: str | None = None,
    reasoning: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    role: bool = False,
    no_choices: bool = False,
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` object shaped like the ones DeepSeek and OpenAI send."""
    delta: dict[str, Any] = {}
    if role:
        delta["role"] = "assistant"
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-0e7c",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "deepseek-chat",
        "system_fingerprint": "fp_test",
        "choices": []
        if no_choices
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def call_delta(
    index: int, arguments: str, *, id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """One entry of ``delta.tool_calls``; ``id``/``name`` only in the first delta of an index."""
    entry: dict[str, Any] = {"index": index}
    function: dict[str, Any] = {"arguments": arguments}
    if id is not None:
        entry["id"] = id
        entry["type"] = "function"
    if name is not None:
        function["name"] = name
    entry["function"] = function
    return entry


def sse(*events: dict[str, Any], done: bool = True) -> list[Piece]:
    """Pieces for a stream of chunk objects, then ``[DONE]`` unless ``done`` is false."""
    pieces: list[Piece] = [event(e) for e in events]
    if done:
        pieces.append(b"data: [DONE]\n\n")
    return pieces


def usage(prompt: int = 12, completion: int = 5, **extra: Any) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        **extra,
    }


class FakeProvider:
    """The server's state: queued replies, received requests, and disconnect notices."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Received] = []
        self.disconnected = threading.Event()
        """Set when a hanging or gated reply saw its client close the connection."""
        self.stopping = threading.Event()
        self.connections = 0
        self.url = ""
        self.routes: dict[tuple[str, str], Reply] = {}
        """Fixed answers by (method, path) for the server's other routes (``/v1/models``,
        ``/props``, ``/api/show``); everything else that is not routed is a 404."""
        self._lock = threading.Lock()

    def reply(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def reply_sse(self, *events: dict[str, Any], done: bool = True) -> None:
        self.reply(Reply(pieces=sse(*events, done=done)))

    def reply_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.reply(
            Reply(
                status=status,
                headers=headers or {},
                pieces=[raw],
                content_type="application/json",
            )
        )

    def route(self, method: str, path: str, status: int, body: Any) -> None:
        """Answer every ``method path`` with ``status`` and the JSON ``body``."""
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.routes[(method, path)] = Reply(
            status=status, pieces=[raw], content_type="application/json"
        )

    def asked(self, method: str, path: str) -> int:
        """How many ``method path`` requests arrived."""
        return sum(1 for r in self.requests if (r.method, r.path) == (method, path))

    def take(self) -> Reply | None:
        with self._lock:
            return self.replies.pop(0) if self.replies else None

    @property
    def last(self) -> Received:
        return self.requests[-1]


def _client_gone(connection: socket.socket, seconds: float) -> bool:
    """Whether the peer closed the connection, waiting up to ``seconds`` for a sign."""
    readable, _, _ = select.select([connection], [], [], seconds)
    if not readable:
        return False
    try:
        return connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.provider.connections += 1

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _wait(self, until: threading.Event | None) -> bool:
        """Block until ``until`` is set (True) or the client leaves (False)."""
        provider = self.server.provider
        deadline = time.monotonic() + HANG_LIMIT
        while time.monotonic() < deadline and not provider.stopping.is_set():
            if until is not None and until.is_set():
                return True
            if _client_gone(self.connection, 0.02):
                provider.disconnected.set()
                return False
        return False

    def _send_piece(self, piece: bytes) -> None:
        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        self.do_POST(method="GET")

    def do_POST(self, method: str = "POST") -> None:
        provider = self.server.provider
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        provider.requests.append(
            Received(
                method=method,
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                client_port=self.client_address[1],
            )
        )
        routed = provider.routes.get((method, self.path))
        if routed is None and not self.path.endswith("/chat/completions"):
            routed = Reply(status=404, pieces=[b'{"error":"not found"}'])
        reply = (
            routed
            or provider.take()
            or Reply(status=500, pieces=[b'{"error":"no scripted reply"}'])
        )
        if reply.hang_before_headers:
            self._wait(None)
            self.close_connection = True
            return
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        try:
            for piece in reply.pieces:
                if isinstance(piece, Hang):
                    self._wait(None)
                    self.close_connection = True
                    return
                if isinstance(piece, Gate):
                    if not self._wait(piece.event):
                        self.close_connection = True
                        return
                    continue
                self._send_piece(piece)
            if reply.cut:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:  # the client went away while we wrote
            provider.disconnected.set()
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    provider: FakeProvider


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    """A running fake provider; ``provider.url`` is its base URL (``http://127.0.0.1:N/v1``)."""
    fake = FakeProvider()
    server = _Server(("127.0.0.1", 0), _Handler)
    server.provider = fake
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.02},
        name="fake-provider",
        daemon=True,
    )
    thread.start()
    try:
        yield fake
    finally:
        fake.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx honours proxy variables; loopback traffic must not be sent to a proxy."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("all_proxy", raising=False)


def assert_well_formed(chunks: list[StreamChunk]) -> None:
    """The ``Model`` protocol's stream shape: blocks open before their deltas and close after,
    indexes are never reused, and exactly one ``finish`` comes last."""
    assert chunks, "an empty stream"
    assert isinstance(chunks[-1], FinishChunk), chunks[-1]
    assert sum(isinstance(c, FinishChunk) for c in chunks) == 1
    open_blocks: dict[int, str] = {}
    seen: set[int] = set()
    for item in chunks:
        if isinstance(item, BlockStartChunk):
            assert item.index not in seen, f"index {item.index} reused"
            seen.add(item.index)
            open_blocks[item.index] = item.block_type
        elif isinstance(item, TextDeltaChunk | ReasoningDeltaChunk | ToolCallDeltaChunk):
            kind = {
                TextDeltaChunk: "text",
                ReasoningDeltaChunk: "reasoning",
                ToolCallDeltaChunk: "tool-call",
            }[type(item)]
            assert open_blocks.get(item.index) == kind, f"{item} outside an open {kind} block"
        elif isinstance(item, BlockEndChunk):
            assert open_blocks.pop(item.index) == item.block.type
    finish = chunks[-1]
    if finish.reason.kind != "error":
        assert not open_blocks, f"blocks left open: {open_blocks}"


@pytest.fixture
def well_formed() -> Any:
    """``assert_well_formed`` as a fixture (tests import nothing from conftest)."""
    return assert_well_formed


@pytest.fixture
def wire() -> Any:
    """Builders for what a provider sends: ``chunk``, ``call_delta``, ``sse``, ``usage``,
    ``event``, and the reply pieces ``Reply``, ``Hang``, ``Gate``."""

    class Wire:
        pass

    namespace = Wire()
    for helper in (chunk, call_delta, sse, usage, event, Reply, Hang, Gate):
        setattr(namespace, helper.__name__, helper)
    namespace.API_KEY = API_KEY  # type: ignore[attr-defined]
    return namespace
