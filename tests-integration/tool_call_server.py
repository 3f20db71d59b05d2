"""An OpenAI-compatible provider for tests whose every answer is one ``bash`` tool call: a
threaded ``http.server`` on 127.0.0.1 (an ephemeral port) streaming the call as SSE. It lets a
real ``dsh run`` start a bash command the test controls. Never reaches beyond loopback.

    with ToolCallServer("sleep 600") as server:
        ...  # point a provider's base_url at server.base_url
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ToolCallServer", "bash_call_events"]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-tool",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def bash_call_events(command: str) -> list[bytes]:
    """The SSE events of an answer that calls ``bash`` once with ``command``."""
    arguments = json.dumps({"command": command, "description": "Run the test's command"})
    call = {
        "index": 0,
        "id": "call-signal-1",
        "type": "function",
        "function": {"name": "bash", "arguments": arguments},
    }
    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"tool_calls": [call]}),
        _chunk({}, finish="tool_calls"),
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
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in bash_call_events(self.server.command):
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    command: str


class ToolCallServer:
    """The running server (a context manager); ``base_url`` is ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, command: str) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.command = command
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
