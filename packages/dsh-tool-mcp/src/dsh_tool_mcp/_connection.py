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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

import anyio
import httpx2
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from dsh_tool_mcp._config import EnvRef, HttpServer, ServerConfig, StdioServer, resolve_values
from dsh_tool_mcp._content import to_tool_result
from dsh_tool_mcp._errors import McpCallError, McpConfigError
from dsh_tool_mcp._log import ServerLines, TextSink, TextStreamSink
from dsh_tool_mcp._status import McpServerStatus, ServerState
from dsh_tool_mcp._stdio import stdio_transport
from dsh_tools import ToolResult

__all__ = ["ServerConnection", "describe_error"]

_T = TypeVar("_T")
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


class _Expired(Exception):
    """Our own clock ran out (never the SDK's: no request is sent with an SDK timeout, so a
    -32001 error is always the server's own answer)."""


async def _within(seconds: float, awaitable: Awaitable[_T]) -> _T:
    """``await awaitable``, raising ``_Expired`` when ``seconds`` pass first (the request is
    then abandoned, and the SDK tells the server to cancel it)."""
    clock = asyncio.timeout(seconds)
    try:
        async with clock:
            return await awaitable
    except Exception:
        if clock.expired():
            raise _Expired from None
        raise


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


class _WatchedSend:
    """The transport's write stream, calling ``on_end`` once a write finds it closed or
    broken: the connection is gone even before the read side has noticed."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    async def send(self, item: Any, /) -> None:
        try:
            await self._inner.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


@dataclass(frozen=True)
class _Link:
    """One connection (one runner generation): its session, the event set once its transport
    ended (read stream over, write refused), and the runner task that owns it."""

    session: ClientSession
    ended: asyncio.Event
    runner: asyncio.Task[None]

    def lost(self) -> bool:
        """Whether the transport is gone (ended, or its runner finished)."""
        return self.ended.is_set() or self.runner.done()


async def _list_tools(session: ClientSession, seconds: float) -> tuple[types.Tool, ...]:
    tools: list[types.Tool] = []
    params: types.PaginatedRequestParams | None = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await _within(seconds, session.list_tools(params=params))
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

    What a failed call means is decided by the exception and the transport's state, never by
    an error code: an error answer (any JSON-RPC code, -32000 and -32001 included) while the
    transport is up is the server refusing the call, and the connection stays; our own clock
    running out is a timeout (the SDK is given no timeout of its own); the transport ending
    (read stream over, a write refused, the runner gone) is a lost connection. Over HTTP, where
    the transport answers for a response stream that broke, an error answer is confirmed by a
    ``ping`` before it is taken as the server's.

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
        log: TextSink | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self._environ = environ
        self._log: TextSink = log if log is not None else TextStreamSink(None)
        self._state: ServerState = "closed"
        self._error: str | None = None
        self._tools: tuple[types.Tool, ...] = ()
        self._link: _Link | None = None
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
        """Disconnect for good (a stdio server's whole process group is killed); later calls
        are refused."""
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            self._stopping = True
            if self._state == "starting":
                task.cancel()
            elif self._wake is not None:
                self._wake.set()
            await asyncio.wait({task})
        self._task, self._link, self._wake = None, None, None
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
        faults: list[str] = []  # why the transport ended itself (a stdout line too long)
        state: ServerState = "closed"
        error: str | None = None
        ended = asyncio.Event()
        runner = asyncio.current_task()
        assert runner is not None

        def current() -> bool:
            return generation == self._generation

        def transport_ended() -> None:
            ended.set()
            wake.set()

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await self._open(stack, secrets, faults.append)
                session = await stack.enter_async_context(
                    ClientSession(
                        _WatchedStream(read, transport_ended),
                        _WatchedSend(write, transport_ended),
                        client_info=_client_info(),
                    )
                )
                seconds = self.config.startup_timeout
                await _within(seconds, session.initialize())
                tools = await _list_tools(session, seconds)
                if current():
                    self._link = _Link(session, ended, runner)
                    self._tools, self._state = tools, "running"
                ready.set()
                await wake.wait()
                if current():
                    self._link = None
                if not self._stopping:
                    raise ConnectionError(
                        faults[0] if faults else "the server closed the connection"
                    )
        except asyncio.CancelledError:
            if not (self._stopping or self._closed):
                state, error = "failed", "the start was cancelled"
            raise
        except Exception as failure:
            state = "failed"
            error = faults[0] if faults else self._describe_failure(failure, tuple(secrets))
            if current():
                # Refused connection: the request that found it out never reached the server.
                self._unreached = isinstance(_leaf(failure), httpx2.ConnectError)
        finally:
            ended.set()
            if current():
                self._link = None
                self._state, self._error = state, error
            ready.set()

    def _describe_failure(self, failure: Exception, secrets: tuple[str, ...]) -> str:
        if isinstance(_leaf(failure), _Expired):
            seconds = _seconds(self.config.startup_timeout)
            return f"no answer at start within {seconds} seconds (startup_timeout)"
        return describe_error(failure, secrets)

    async def _open(
        self,
        stack: contextlib.AsyncExitStack,
        secrets: list[str],
        on_fault: Callable[[str], None],
    ) -> Any:
        """Enter the transport; the resolved secrets go to ``secrets`` (for scrubbing only),
        and why a stdio transport ended itself to ``on_fault``."""
        environ: Mapping[str, str] = os.environ if self._environ is None else self._environ
        config = self.config
        if isinstance(config, StdioServer):
            env = resolve_values(self.name, "env", config.env, environ)
            secrets.extend(
                env[key] for key, value in config.env.items() if isinstance(value, EnvRef)
            )
            lines = ServerLines(self.name, self._log)
            stack.callback(lines.close)  # after the transport: its last lines are in
            return await stack.enter_async_context(
                stdio_transport(
                    config.command,
                    list(config.args),
                    env=env,
                    cwd=config.cwd,
                    on_stderr=lines.feed,
                    on_fault=on_fault,
                )
            )
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
        docstring for what each failure means and the restart rule). Cancelling the calling
        task cancels the request on the server and leaves the connection usable."""
        restarted = False
        while True:
            link, fresh = await self._link_for(tool, may_restart=not restarted)
            restarted = restarted or fresh
            try:
                result = await _within(self.config.timeout, link.session.call_tool(tool, arguments))
            except _Expired:
                raise McpCallError(
                    self.name,
                    tool,
                    f"timed out after {_seconds(self.config.timeout)} seconds (the "
                    "server's timeout); the call was cancelled",
                    code="MCP_TIMEOUT",
                ) from None
            except Exception as error:
                failure = await self._failure(tool, error, link, restarted=restarted)
                if failure is None:
                    continue  # the server never saw the call: reconnect and send it again
                raise failure from None
            return to_tool_result(self.name, tool, result)

    async def _failure(
        self, tool: str, error: Exception, link: _Link, *, restarted: bool
    ) -> McpCallError | None:
        """What a failed call is: the ``McpCallError`` to answer, or None to send the call
        again (the server provably never saw it, and it has not been restarted for it yet)."""
        answer = error if isinstance(error, MCPError) else None
        http = isinstance(self.config, HttpServer)
        expired = answer is not None and http and _session_expired(answer)
        lost, probed = link.lost(), False
        if answer is not None and http and not lost and not expired:
            # The HTTP transport answers for a response stream that broke: ask the server.
            lost, probed = not await self._answers_ping(link), True
        if expired or lost:
            await self._settle()
            if self._closed:
                return self._closed_error(tool)
            unreached = self._unreached and not probed
            if (expired or unreached) and not restarted:
                return None
            why = f" ({self._error})" if self._error else ""
            return McpCallError(
                self.name,
                tool,
                f"the connection to the server was lost during the call{why}; the "
                "server is restarted on the next call",
                code="MCP_CONNECTION_LOST",
            )
        if self._closed:
            return self._closed_error(tool)
        if answer is not None:
            return McpCallError(
                self.name,
                tool,
                f"the server refused the call: {describe_error(answer)}",
                code="MCP_PROTOCOL_ERROR",
            )
        return McpCallError(  # a result that does not validate, input required, …
            self.name,
            tool,
            f"the server's answer is unusable: {describe_error(error)}",
            code="MCP_PROTOCOL_ERROR",
        )

    async def _answers_ping(self, link: _Link) -> bool:
        """Whether the server still answers on this connection (any answer counts)."""
        try:
            await _within(self.config.startup_timeout, link.session.send_ping())
        except MCPError:
            pass  # an answer, unless the transport ended (checked below)
        except Exception:
            return False
        return not link.lost()

    def _usable(self) -> _Link | None:
        link, wake = self._link, self._wake
        if self._state == "running" and link is not None and not (wake and wake.is_set()):
            return link
        return None

    async def _link_for(self, tool: str, *, may_restart: bool) -> tuple[_Link, bool]:
        """The running connection, starting the server first (once) when it is not running."""
        if self._closed:
            raise self._closed_error(tool)
        link = self._usable()
        if link is not None:
            return link, False
        async with self._lock:
            if self._closed:
                raise self._closed_error(tool)
            link = self._usable()
            if link is not None:
                return link, False
            if may_restart:
                await self._launch()
                link = self._usable()
                if link is not None:
                    return link, True
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
