"""A real MCP server for the tests, built with the SDK: ``python mcp_demo_server.py stdio`` or
``python mcp_demo_server.py http PORT`` (PORT 0: a free one; the bound port is printed first).

Tools: ``echo``, ``env``, ``header``, ``pid``, ``fail`` (an ``isError`` result), ``image``,
``weather`` (structured, with the SDK's JSON text), ``structured_only`` (structured, no
content), ``block`` (signals its start through a file, then waits until cancelled, recording
the cancellation in another file), ``die`` (the process exits during the call), ``refuse``
(answers with a JSON-RPC error of the given code), ``count`` (a counter kept by the process),
``garble`` (writes invalid UTF-8 lines to the protocol's stdout before answering), ``spawn``
(starts a child process that outlives the call; with ``detach`` its stdio is /dev/null,
otherwise it holds the protocol's stdout), ``endless_line`` (writes the start of an answer
to the protocol's stdout and then bytes without a newline until it is killed), ``chatter``
(writes KiB of lines to stderr).
With ``DEMO_COLLIDING_TOOLS=1`` it also has ``get.item`` and ``get_item``; with
``DEMO_ENDLESS_LINE_AT_START=1`` it writes an endless stdout line instead of serving.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import subprocess
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8

server = MCPServer("demo", log_level="WARNING")

# The protocol's stdout, kept before the SDK's stdio server diverts fd 1 to stderr.
WIRE = os.dup(1)


@server.tool()
def echo(text: str) -> str:
    """Repeat the text."""
    return text


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable of the server process."""
    return os.environ.get(name, "<unset>")


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of a header of the HTTP request that carried this call."""
    return (ctx.headers or {}).get(name.lower(), "<unset>")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def fail(reason: str) -> CallToolResult:
    """Answer with an error result."""
    return CallToolResult(content=[TextContent(type="text", text=reason)], is_error=True)


@server.tool()
def image() -> Image:
    """A tiny PNG."""
    return Image(data=PNG, format="png")


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool()
def weather(city: str) -> Weather:
    """Structured output (the SDK also sends it as JSON text)."""
    return Weather(city=city, celsius=21.5)


@server.tool()
def structured_only(city: str) -> CallToolResult:
    """Structured content with no content blocks at all."""
    return CallToolResult(content=[], structured_content={"city": city, "rain": True})


def _write(path: str, text: str) -> None:
    Path(path).write_text(text)


@server.tool()
async def block(marker: str) -> str:
    """Write 'started' to MARKER, then wait until cancelled; a cancellation is recorded in
    MARKER.cancelled."""
    _write(marker, "started")
    try:
        await asyncio.Event().wait()
    except BaseException:
        _write(marker + ".cancelled", "cancelled")
        raise
    return "never"


@server.tool()
def die() -> str:
    """Exit the server process in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


@server.tool()
def refuse(code: int, message: str) -> str:
    """Answer the call with a JSON-RPC error: CODE and MESSAGE."""
    raise MCPError(code, message)


_COUNTER = itertools.count(1)


@server.tool()
def count() -> int:
    """1 on the first call, then 2, 3, ... (kept by this process)."""
    return next(_COUNTER)


@server.tool()
def garble(text: str) -> str:
    """Write lines with invalid UTF-8 to stdout (one of them a JSON-RPC notification with an
    invalid byte in a string), then answer with TEXT."""
    os.write(WIRE, b"\xff\xfe\x80 not even json \xc3\x28\n")
    notification = b'{"jsonrpc": "2.0", "method": "notifications/message", '
    notification += b'"params": {"level": "info", "data": "bad \xff byte"}}\n'
    os.write(WIRE, notification)
    return text


@server.tool()
def endless_line() -> str:
    """Start a JSON-RPC message on stdout and never end its line: 1 MiB writes of "a"
    until the process is killed."""
    os.write(WIRE, b'{"jsonrpc": "2.0", "id": 1, "result": {"content": [{"text": "')
    chunk = b"a" * (1024 * 1024)
    while True:
        os.write(WIRE, chunk)


@server.tool()
def spawn(detach: bool) -> int:
    """Start a child process that sleeps for a long time; answer with its pid. Unless
    DETACH, it holds the protocol's stdout and the server's stderr open."""
    if detach:
        where = subprocess.DEVNULL
        child = subprocess.Popen(["sleep", "1000"], stdin=where, stdout=where, stderr=where)
    else:
        child = subprocess.Popen(["sleep", "1000"], stdout=WIRE, pass_fds=(WIRE,))
    return child.pid


@server.tool()
def chatter(kib: int) -> str:
    """Write KIB KiB of lines to stderr."""
    line = "chatter " + "x" * 1015 + "\n"  # 1 KiB with the newline
    for _ in range(kib):
        sys.stderr.write(line)
    sys.stderr.flush()
    return "done"


if os.environ.get("DEMO_COLLIDING_TOOLS") == "1":

    @server.tool(name="get.item")
    def get_item_dotted() -> str:
        return "dotted"

    @server.tool(name="get_item")
    def get_item_plain() -> str:
        return "plain"


def serve_http(port: int) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    if os.environ.get("DEMO_ENDLESS_LINE_AT_START") == "1":
        endless_line()
    if sys.argv[1] == "stdio":
        server.run()
    else:
        serve_http(int(sys.argv[2]))
