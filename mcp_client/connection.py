"""One MCP server's connection: started, watched, restarted after a crash, stopped.

A connection is a task on the agents' loop. It starts the server (a local
process over stdio, or a remote one over streamable HTTP with SSE as the
fallback), initializes the session, lists the tools, then watches the server
with pings. A server that fails or goes away is started again after a pause
that doubles each time (`FIRST_BACKOFF` up to `MAX_BACKOFF`) and falls back
to the first once the server has stayed up a while. A local server's stderr
goes to a file whose end is shown in its status. Stopping ends the session
the SDK's way, which stops the whole process group of a local server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
import time
from collections.abc import AsyncIterator
from typing import IO, Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, Implementation, PaginatedRequestParams

from helpers.mcp_config import HttpServer, ServerConfig, StdioServer, Transport
from helpers.outbound import OutboundPolicy
from helpers.programs import ProgramRefused, check_mcp_server
from mcp_client.status import (
    McpCallError,
    McpTimeout,
    McpUnavailable,
    ServerStatus,
    State,
)
from mcp_client.tools import TOOL_NAME, TOOLS_LIMIT, McpToolInfo

log = logging.getLogger(__name__)

#: Pause before the first restart; doubled after each failure up to MAX_BACKOFF.
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 30.0
#: A server up this long counts as healthy: its next crash waits FIRST_BACKOFF again.
HEALTHY_AFTER = 60.0
#: Seconds a server has to start, initialize and list its tools.
CONNECT_TIMEOUT = 30.0
#: Seconds between pings (a local server's crash is seen at once by a cheap ping).
PING_EVERY = {"stdio": 1.0, "streamable-http": 10.0, "sse": 10.0}
PING_TIMEOUT = 10.0
#: Seconds a stop waits for the session to end before cancelling it.
STOP_GRACE = 8.0
#: Characters of a local server's stderr kept for its status.
STDERR_TAIL = 2_000
#: Error codes of the SDK (mcp_types.jsonrpc): the connection closed, a request timed out.
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001

CLIENT_INFO = Implementation(name="cadre", version="1")


class ServerConnection:
    """The background task that keeps one server connected (see the module docstring)."""

    def __init__(
        self, name: str, config: ServerConfig, policy: OutboundPolicy | None = None
    ) -> None:
        self.name = name
        self.config = config
        #: Where a remote server may be (helpers/outbound.py), checked at each connect.
        self.policy = policy or OutboundPolicy()
        self.state: State = "disabled" if config.disabled else "starting"
        self.error: str | None = None
        self.restarts = 0
        self.tools: tuple[McpToolInfo, ...] = ()
        #: The transport in use (an HTTP server may have fallen back to SSE).
        self.transport: Transport = config.transport
        #: When the tools were first listed (for the start-up benchmark), monotonic seconds.
        self.ready_at: float | None = None
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        #: Set to end the watch early: a stop, or a call that found the connection gone.
        self._wake = asyncio.Event()
        self._stderr: IO[bytes] | None = None

    # -- control (on the agents' loop) -------------------------------------------

    def start(self) -> None:
        if self.config.disabled or self._task is not None:
            return
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"mcp:{self.name}")

    async def stop(self) -> None:
        """End the session (and a local server's processes); returns when it has."""
        self._stop.set()
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            if self.state != "ready":
                # Starting (maybe stuck) or waiting to restart: nothing to end cleanly. The
                # SDK's shutdown, shielded from the cancel, still ends a local server.
                task.cancel()
            done, _ = await asyncio.wait({task}, timeout=STOP_GRACE)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=STOP_GRACE)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if not self.config.disabled:
            self.state = "stopped"

    def status(self) -> ServerStatus:
        return ServerStatus(self.name, self.transport, self.state, self.error,
                            self.stderr_tail(), self.restarts, self.tools)  # fmt: skip

    def stderr_tail(self) -> str:
        """The end of what a local server wrote to stderr in its latest start."""
        if self._stderr is None:
            return ""
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - STDERR_TAIL)
        # pread: the file offset is shared with the server process, which still writes.
        return os.pread(fd, size - start, start).decode("utf-8", errors="replace")

    # -- calls ------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> CallToolResult:
        """Call `tool`: McpUnavailable when not ready, McpTimeout past `timeout`,
        McpCallError when the server answers with an error."""
        session = self._session
        if session is None or self.state != "ready":
            raise McpUnavailable(self.describe_state())
        try:
            return await session.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            if exc.error.code == REQUEST_TIMEOUT:
                raise McpTimeout(f"no answer in {timeout:g} s") from exc
            if exc.error.code == CONNECTION_CLOSED:
                self._wake.set()  # the watch starts it again now, not at the next ping
            raise McpCallError(exc.error.message) from exc

    def describe_state(self) -> str:
        """The state in words, for a model that called a tool of a server not ready."""
        if self.state == "failed":
            return f"it failed ({self.error}); it is being restarted"
        return {"starting": "it is still starting", "stopped": "it was stopped",
                "disabled": "it is disabled", "ready": "it is ready"}[self.state]  # fmt: skip

    # -- the task -----------------------------------------------------------------------

    async def _run(self) -> None:
        delay = FIRST_BACKOFF
        first = True
        while not self._stop.is_set():
            if not first:
                self.restarts += 1
            first = False
            self.state, self.error = "starting", None
            began = time.monotonic()
            try:
                await self._serve()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure is shown and retried
                self.error = describe(exc)
                log.warning("MCP server %r failed: %s", self.name, self.error)
            finally:
                self._session, self.tools = None, ()
            if self._stop.is_set():
                break
            self.state = "failed"
            self.error = self.error or "the server closed the connection"
            if time.monotonic() - began > HEALTHY_AFTER:
                delay = FIRST_BACKOFF
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
            delay = min(delay * 2, MAX_BACKOFF)
        self.state = "stopped"

    async def _serve(self) -> None:
        """One life of the server: connect, list its tools, watch it until it goes or stops."""
        self._wake.clear()
        attempts = _transports(self.config)
        for number, transport in enumerate(attempts):
            try:
                async with self._session_over(transport) as session:
                    with anyio.fail_after(CONNECT_TIMEOUT):
                        await session.initialize()
                        self.tools = await self._list_tools(session)
                    self._session, self.transport = session, transport
                    self.state = "ready"
                    self.ready_at = self.ready_at or time.monotonic()
                    log.info("MCP server %r ready with %d tools", self.name, len(self.tools))
                    await self._watch(session, transport)
                    return
            except Exception:
                if self.state == "ready" or number == len(attempts) - 1:
                    raise
                log.info("MCP server %r: %s failed, trying %s", self.name, transport,
                         attempts[number + 1])  # fmt: skip

    @contextlib.asynccontextmanager
    async def _session_over(self, transport: Transport) -> AsyncIterator[ClientSession]:
        async with contextlib.AsyncExitStack() as stack:
            if not isinstance(self.config, StdioServer):  # a remote one: where is it?
                await asyncio.to_thread(self.policy.check_url, self.config.url)  # resolves
            if isinstance(self.config, StdioServer):
                # The host starts it: never a program an agent could have written (checked
                # at each start: a file may have been swapped since the setting was saved).
                await asyncio.to_thread(check_mcp_server, self.name, self.config)
                streams = stdio_client(self._stdio_parameters(), errlog=self._fresh_stderr())
            elif transport == "sse":
                streams = sse_client(self.config.url, headers=dict(self.config.headers))
            else:
                client = create_mcp_http_client(headers=dict(self.config.headers))
                streams = streamable_http_client(self.config.url, http_client=client)
                await stack.enter_async_context(client)
            read, write = await stack.enter_async_context(streams)
            session = ClientSession(read, write, client_info=CLIENT_INFO)
            yield await stack.enter_async_context(session)

    def _stdio_parameters(self) -> StdioServerParameters:
        config = self.config
        assert isinstance(config, StdioServer)
        return StdioServerParameters(command=config.command, args=list(config.args),
                                     env=dict(config.env) or None, cwd=config.cwd)  # fmt: skip

    def _fresh_stderr(self) -> IO[bytes]:
        """An empty stderr file for this start (the last start's tail stays until now)."""
        if self._stderr is None:
            self._stderr = tempfile.TemporaryFile(prefix=f"cadre-mcp-{self.name}-")  # noqa: SIM115
        os.ftruncate(self._stderr.fileno(), 0)
        os.lseek(self._stderr.fileno(), 0, os.SEEK_SET)
        return self._stderr

    async def _list_tools(self, session: ClientSession) -> tuple[McpToolInfo, ...]:
        found: list[McpToolInfo] = []
        cursor: str | None = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            listed = await session.list_tools(params=params)
            for tool in listed.tools:
                if not TOOL_NAME.fullmatch(tool.name):
                    log.warning("MCP server %r: tool %r skipped (a name Cadre cannot call)",
                                self.name, tool.name[:80])  # fmt: skip
                    continue
                if len(found) == TOOLS_LIMIT:
                    # A server may list thousands (or page without end): the prompt stays
                    # bounded, and listing ends.
                    log.warning("MCP server %r lists more than %d tools: the rest are left out",
                                self.name, TOOLS_LIMIT)  # fmt: skip
                    return tuple(found)
                found.append(McpToolInfo(self.name, tool.name, tool.description or "",
                                         dict(tool.input_schema or {})))  # fmt: skip
            cursor = listed.next_cursor
            if not cursor:
                return tuple(found)

    async def _watch(self, session: ClientSession, transport: Transport) -> None:
        """Return when asked to stop; raise when the server stops answering."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), PING_EVERY[transport])
            if self._stop.is_set():
                return
            self._wake.clear()
            with anyio.fail_after(PING_TIMEOUT):
                await session.send_ping()


def _transports(config: ServerConfig) -> list[Transport]:
    """The transports to try, in order."""
    if isinstance(config, HttpServer) and config.sse_fallback:
        return ["streamable-http", "sse"]
    return [config.transport]


def describe(exc: BaseException) -> str:
    """An error in one line: the first real error inside task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.message
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, ProgramRefused):
        return str(exc)  # in plain words already
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
