"""An OpenAI-compatible provider for tests whose every answer is one ``bash`` tool call: a
threaded ``http.server`` on 127.0.0.1 (an ephemeral port) streaming the call as SSE. It lets a
real ``dsh run`` start the bash commands the test controls. Never reaches beyond loopback.

    with ToolCallServer([{"command": "sleep 600"}]) as server:
        ...  # point a provider's base_url at server.base_url

The n-th request gets the n-th arguments (the last ones again once they run out), as call
``call-<n>``; an entry that is a string is a plain text answer instead (ending the turn).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ToolCallServer", "bash_call_events", "text_events"]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-tool",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def bash_call_events(arguments: dict[str, Any], call_id: str) -> list[bytes]:
    """The SSE events of an answer that calls ``bash`` once with ``arguments``."""
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps(arguments)},
    }
    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"tool_calls": [call]}),
        _chunk({}, finish="tool_calls"),
    ]
    events = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]
    return [*events, b"data: [DONE]\n\n"]


def text_events(text: str) -> list[bytes]:
    """The SSE events of a plain text answer."""
    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": text}),
        _chunk({}, finish="stop"),
    ]
    events = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]
    return [*events, b"data: [DONE]\n\n"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/chat/completions":
            self.send_error(404, "no such endpoint")
            return
        with self.server.lock:
            self.server.answered += 1
            number = self.server.answered
        calls = self.server.calls
        arguments = calls[min(number, len(calls)) - 1]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = (
            text_events(arguments)
            if isinstance(arguments, str)
            else bash_call_events(arguments, f"call-{number}")
        )
        for event in events:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    calls: list[dict[str, Any] | str]
    answered: int
    lock: threading.Lock


class ToolCallServer:
    """The running server (a context manager); ``base_url`` is ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, calls: list[dict[str, Any] | str]) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.calls = list(calls)
        self._server.answered = 0
        self._server.lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="tool-call-server",
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def __enter__(self) -> ToolCallServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
