"""One MCP server: the task that owns its connection, its restarts, and the calls made to it.

The transport (a subprocess for stdio, an HTTP client for streamable HTTP) and the
``mcp.ClientSession`` over it live in one background task per server, the *runner*, because
the SDK's transports are anyio task groups that must be entered and left by the same task and
that cancel their host task when they fail. Calls come from the agents' tasks and only send
requests through the session, so a dying transport never cancels a caller, and cancelling a
caller only abandons (and cancels on the server) that one request.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Mapping
from importlib import metadata
from types import TracebackType
from typing import Any, Protocol, Self, TextIO, TypeVar

import httpx2
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from dsh_tool_mcp._config import EnvRef, HttpServer, ServerConfig, StdioServer, resolve_values
from dsh_tool_mcp._content import to_tool_result
from dsh_tool_mcp._errors import McpCallError, McpConfigError
from dsh_tool_mcp._status import McpServerStatus, ServerState
from dsh_tools import ToolResult

__all__ = ["ServerConnection", "describe_error"]

_T_co = TypeVar("_T_co", covariant=True)

_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: SSE streams stay open
_SETTLE_SECONDS = 30.0  # bound on waiting for a dying connection to finish tearing down
_MAX_TOOL_PAGES = 1000


def _client_info() -> types.Implementation:
    try:
        version = metadata.version("dsh-tool-mcp")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        version = "0"
    return types.Implementation(name="dsh-tool-mcp", version=version)


def _seconds(value: float) -> str:
    return f"{value:g}"


def _leaf(error: BaseException) -> BaseException:
    """The first non-cancellation leaf of an exception group (anyio wraps task failures)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        leaves = [e for e in error.exceptions if not isinstance(e, asyncio.CancelledError)]
        error = (leaves or list(error.exceptions))[0]
    return error


def describe_error(error: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """A one-line description of ``error`` (the first leaf of an exception group), with every
    string of ``secrets`` replaced by ``***``."""
    error = _leaf(error)
    if isinstance(error, MCPError):
        text = f"MCP error {error.error.code}: {error.error.message}"
    elif isinstance(error, McpConfigError):
        text = str(error)
    else:
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


class _Receiving(Protocol[_T_co]):
    async def receive(self) -> _T_co: ...
    async def aclose(self) -> None: ...
    async def __anext__(self) -> _T_co: ...


class _WatchedStream:
    """The transport's read stream, calling ``on_end`` once it ends (EOF, closed, broken):
    how the runner learns that an idle server died."""

    def __init__(self, inner: _Receiving[Any], on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """The sender's context of the latest item, when the transport records one."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except asyncio.CancelledError:
            raise
        except BaseException:
            self._on_end()
            raise

    async def aclose(self) -> None:
        self._on_end()
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except asyncio.CancelledError:
            raise
        except BaseException:
            self._on_end()
            raise

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def _list_tools(session: ClientSession) -> tuple[types.Tool, ...]:
    tools: list[types.Tool] = []
    params: types.PaginatedRequestParams | None = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        if not page.next_cursor:
            return tuple(tools)
        params = types.PaginatedRequestParams(cursor=page.next_cursor)
    raise RuntimeError(f"tools/list did not end after {_MAX_TOOL_PAGES} pages")


def _session_expired(error: MCPError) -> bool:
    # How a streamable HTTP server that restarted answers a request carrying the old session
    # id (HTTP 404: "Session not found" in the body, or the transport's "Session terminated"):
    # an invalid request, refused before any tool ran.
    return error.error.code == types.INVALID_REQUEST and "session" in error.error.message.lower()


class ServerConnection:
    """One configured server: ``start()``, ``call(tool, arguments)``, ``status()``, ``aclose()``.

    Restart rule: a call that finds the server not running (its start failed, or its
    connection was lost) starts it again first, once for that call; when that start fails too,
    the call is an ``MCP_SERVER_UNAVAILABLE`` error result. A call under way when the
    connection is lost is not sent again (it may have had effects): it is an
    ``MCP_CONNECTION_LOST`` error result and the next call restarts the server. Exception:
    when the server provably never saw the call — an HTTP server refused the session (it
    restarted and forgot it: an invalid-request error about the session) or refused the
    connection — the call restarts the connection and is sent once more (still one restart).
    """

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        environ: Mapping[str, str] | None = None,
        errlog: TextIO | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self._environ = environ
        self._errlog = errlog
        self._state: ServerState = "closed"
        self._error: str | None = None
        self._tools: tuple[types.Tool, ...] = ()
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._generation = 0
        self._stopping = False
        self._closed = False
        self._unreached = False
        self._lock = asyncio.Lock()

    # -- state ------------------------------------------------------------------------------

    @property
    def state(self) -> ServerState:
        """The server's state (see ``ServerState``)."""
        return self._state

    @property
    def tools(self) -> tuple[types.Tool, ...]:
        """The server's tools from its latest successful listing."""
        return self._tools

    def status(self) -> McpServerStatus:
        """``{name, state, error?, tools}`` for this server."""
        return McpServerStatus(
            name=self.name,
            state=self._state,
            error=self._error if self._state == "failed" else None,
            tools=[tool.name for tool in self._tools],
        )

    def __repr__(self) -> str:
        return f"<ServerConnection {self.name!r} {self._state}>"

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and list the tools, unless already running or closed. Never raises for a
        server that fails to start: the failure is its ``status()``."""
        async with self._lock:
            if not self._closed and self._state != "running":
                await self._launch()

    async def aclose(self) -> None:
        """Disconnect (stopping a stdio server's process) for good; later calls are refused."""
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            self._stopping = True
            if self._state == "starting":
                task.cancel()
            elif self._wake is not None:
                self._wake.set()
            await asyncio.wait({task})
        self._task, self._session, self._wake = None, None, None
        self._state, self._error = "closed", None

    async def _launch(self) -> None:
        await self._retire()
        self._generation += 1
        ready, wake = asyncio.Event(), asyncio.Event()
        self._state, self._error, self._stopping = "starting", None, False
        self._unreached = False
        self._wake = wake
        self._task = asyncio.create_task(
            self._run(self._generation, ready, wake), name=f"dsh-tool-mcp server {self.name}"
        )
        try:
            await ready.wait()
        except asyncio.CancelledError:
            self._task.cancel()
            raise

    async def _retire(self) -> None:
        """Wait for the previous runner (told to stop if it still runs) to finish."""
        task, wake = self._task, self._wake
        if task is None:
            return
        if not task.done():
            if wake is not None:
                wake.set()
            await asyncio.wait({task})
        self._task = None

    async def _settle(self) -> None:
        """After the connection failed under a call: let the runner notice and tear down, so
        the state is ``failed`` (or ``closed``) when the call answers."""
        task, wake = self._task, self._wake
        if task is None or task.done():
            return
        if wake is not None:
            wake.set()
        await asyncio.wait({task}, timeout=_SETTLE_SECONDS)

    async def _run(self, generation: int, ready: asyncio.Event, wake: asyncio.Event) -> None:
        secrets: list[str] = []
        state: ServerState = "closed"
        error: str | None = None

        def current() -> bool:
            return generation == self._generation

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await self._open(stack, secrets)
                session = await stack.enter_async_context(
                    ClientSession(
                        _WatchedStream(read, wake.set),
                        write,
                        read_timeout_seconds=self.config.startup_timeout,
                        client_info=_client_info(),
                    )
                )
                await session.initialize()
                tools = await _list_tools(session)
                if current():
                    self._session, self._tools, self._state = session, tools, "running"
                ready.set()
                await wake.wait()
                if current():
                    self._session = None
                if not self._stopping:
                    raise ConnectionError("the server closed the connection")
        except asyncio.CancelledError:
            if not (self._stopping or self._closed):
                state, error = "failed", "the start was cancelled"
            raise
        except Exception as failure:
            state, error = "failed", self._describe_failure(failure, tuple(secrets))
            if current():
                # Refused connection: the request that found it out never reached the server.
                self._unreached = isinstance(_leaf(failure), httpx2.ConnectError)
        finally:
            if current():
                self._session = None
                self._state, self._error = state, error
            ready.set()

    def _describe_failure(self, failure: Exception, secrets: tuple[str, ...]) -> str:
        if isinstance(failure, MCPError) and failure.error.code == types.REQUEST_TIMEOUT:
            seconds = _seconds(self.config.startup_timeout)
            return f"no answer at start within {seconds} seconds (startup_timeout)"
        return describe_error(failure, secrets)

    async def _open(self, stack: contextlib.AsyncExitStack, secrets: list[str]) -> Any:
        """Enter the transport; the resolved secrets go to ``secrets`` (for scrubbing only)."""
        environ: Mapping[str, str] = os.environ if self._environ is None else self._environ
        config = self.config
        if isinstance(config, StdioServer):
            env = resolve_values(self.name, "env", config.env, environ)
            secrets.extend(
                env[key] for key, value in config.env.items() if isinstance(value, EnvRef)
            )
            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=env or None, cwd=config.cwd
            )
            errlog = self._errlog if self._errlog is not None else sys.stderr
            return await stack.enter_async_context(stdio_client(params, errlog=errlog))
        headers = resolve_values(self.name, "headers", config.headers, environ)
        secrets.extend(
            headers[key] for key, value in config.headers.items() if isinstance(value, EnvRef)
        )
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=headers, timeout=_HTTP_TIMEOUT)
        )
        return await stack.enter_async_context(streamable_http_client(config.url, http_client=http))

    # -- calls ------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call ``tool`` with ``arguments``; failures raise ``McpCallError`` (see the class
        docstring for the restart rule). Cancelling the calling task cancels the request on the
        server and leaves the connection usable."""
        restarted = False
        while True:
            session, fresh = await self._session_for(tool, may_restart=not restarted)
            restarted = restarted or fresh
            try:
                result = await session.call_tool(
                    tool, arguments, read_timeout_seconds=self.config.timeout
                )
            except MCPError as error:
                expired = isinstance(self.config, HttpServer) and _session_expired(error)
                if error.error.code == types.CONNECTION_CLOSED or expired:
                    await self._settle()
                    if self._closed:
                        raise self._closed_error(tool) from None
                    if (expired or self._unreached) and not restarted:
                        continue  # the server never saw the call: reconnect and send it again
                    why = f" ({self._error})" if self._error else ""
                    raise McpCallError(
                        self.name,
                        tool,
                        f"the connection to the server was lost during the call{why}; the "
                        "server is restarted on the next call",
                        code="MCP_CONNECTION_LOST",
                    ) from None
                if error.error.code == types.REQUEST_TIMEOUT:
                    raise McpCallError(
                        self.name,
                        tool,
                        f"timed out after {_seconds(self.config.timeout)} seconds (the "
                        "server's timeout); the call was cancelled",
                        code="MCP_TIMEOUT",
                    ) from None
                raise McpCallError(
                    self.name,
                    tool,
                    f"the server refused the call: {describe_error(error)}",
                    code="MCP_PROTOCOL_ERROR",
                ) from None
            except Exception as error:  # a result that does not validate, input required, …
                raise McpCallError(
                    self.name,
                    tool,
                    f"the server's answer is unusable: {describe_error(error)}",
                    code="MCP_PROTOCOL_ERROR",
                ) from None
            return to_tool_result(self.name, tool, result)

    def _usable(self) -> ClientSession | None:
        session, wake = self._session, self._wake
        if self._state == "running" and session is not None and not (wake and wake.is_set()):
            return session
        return None

    async def _session_for(self, tool: str, *, may_restart: bool) -> tuple[ClientSession, bool]:
        """The running session, starting the server first (once) when it is not running."""
        if self._closed:
            raise self._closed_error(tool)
        session = self._usable()
        if session is not None:
            return session, False
        async with self._lock:
            if self._closed:
                raise self._closed_error(tool)
            session = self._usable()
            if session is not None:
                return session, False
            if may_restart:
                await self._launch()
                session = self._usable()
                if session is not None:
                    return session, True
            if self._closed:
                raise self._closed_error(tool)
        why = f" ({self._error})" if self._error else ""
        raise McpCallError(
            self.name,
            tool,
            f"the server is not running and could not be restarted{why}",
            code="MCP_SERVER_UNAVAILABLE",
        )

    def _closed_error(self, tool: str) -> McpCallError:
        return McpCallError(
            self.name, tool, "the MCP servers have been closed", code="MCP_SERVER_CLOSED"
        )
