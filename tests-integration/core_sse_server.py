"""A tiny OpenAI-compatible provider for tests: a threaded ``http.server`` on 127.0.0.1 (an
ephemeral port) that answers ``POST /v1/chat/completions`` with a recorded-shaped SSE stream,
lists one model (``test-model``) at ``GET /v1/models``, and records every request it receives.
Never reaches beyond the loopback interface.

    with SseServer(["Hi", " there"]) as server:
        ...  # point a provider's base_url at server.base_url
        server.requests[0].headers["authorization"]
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["SERVED_MODEL", "Received", "SseServer", "stream_events"]

SERVED_MODEL = "test-model"
"""The one model ``GET /v1/models`` lists."""


@dataclass(frozen=True)
class Received:
    """One request as the server saw it (header names lowercased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def stream_events(pieces: list[str]) -> list[bytes]:
    """The SSE events of an answer saying ``pieces`` in order: a role chunk, one content chunk
    per piece, a ``finish_reason`` chunk, a usage chunk (no choices), then ``[DONE]``."""
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": piece}) for piece in pieces]
    chunks.append(_chunk({}, finish="stop"))
    usage = {"prompt_tokens": 12, "completion_tokens": len(pieces), "total_tokens": 12}
    chunks.append({**_chunk({}), "choices": [], "usage": usage})
    events = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]
    return [*events, b"data: [DONE]\n\n"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        received = Received(
            method="GET",
            path=self.path,
            headers={key.lower(): value for key, value in self.headers.items()},
            body=b"",
        )
        with self.server.lock:
            self.server.received.append(received)
        if self.path != "/v1/models":
            self.send_error(404, "no such endpoint")
            return
        body = json.dumps({"object": "list", "data": [{"id": SERVED_MODEL}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        received = Received(
            method="POST",
            path=self.path,
            headers={key.lower(): value for key, value in self.headers.items()},
            body=body,
        )
        with self.server.lock:
            self.server.received.append(received)
        if self.path != "/v1/chat/completions":
            self.send_error(404, "no such endpoint")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in stream_events(self.server.pieces):
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    pieces: list[str]
    received: list[Received]
    lock: threading.Lock


class SseServer:
    """The running server (a context manager): ``base_url`` is ``http://127.0.0.1:PORT/v1``;
    ``requests`` are the requests received so far, in order."""

    def __init__(self, pieces: list[str]) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.pieces = list(pieces)
        self._server.received = []
        self._server.lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="core-sse-server",
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[Received]:
        with self._server.lock:
            return list(self._server.received)

    def __enter__(self) -> SseServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
