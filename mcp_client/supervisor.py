"""The MCP servers of the setting, kept connected: one supervisor for the whole process.

`McpSupervisor` owns a `ServerConnection` per server, all on the agents'
loop. `apply(text)` puts a new `mcp_servers` value to work without a restart:
a server whose config changed is restarted, a removed one stopped, a new one
started, the others left alone. Web handlers (other threads) use the
thread-safe methods (`apply`, `statuses`, `restart`, `stop`); agents, on the
loop, ask `tools` and `call` directly.

The MCP SDK takes seconds to import, so it is imported by `apply` (in the
caller's thread, never on the agents' loop) and only when there is a server.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helpers.mcp_config import ServerConfig, parse_mcp_servers
from helpers.outbound import OutboundPolicy, policy
from helpers.runtime import AgentRuntime
from helpers.settings import load_settings
from mcp_client.status import ServerStatus
from mcp_client.tools import McpToolInfo

if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from mcp_client.connection import ServerConnection

log = logging.getLogger(__name__)

#: The modules that need the SDK (or jsonschema): imported by `prepare`, so that neither
#: a server's start nor an agent's first call imports them on the agents' loop.
_SDK_MODULES = ("mcp_client.connection", "mcp_client.results", "mcp_client.validation")
#: Seconds a web handler waits for the loop to answer a status.
CALL_TIMEOUT = 10.0
#: Seconds `apply` and `restart` wait for servers to stop (a stuck one is cut at 16 s).
APPLY_TIMEOUT = 30.0


class McpSupervisor:
    """Every configured MCP server's connection (see the module docstring)."""

    def __init__(self, runtime: AgentRuntime, space: Path | None = None) -> None:
        self.runtime = runtime
        #: Whose servers these are (None: the server's, shared): file URLs reach their folder.
        self.space = space
        #: In the setting's order.
        self.connections: dict[str, ServerConnection] = {}
        #: Servers of a setting being applied, shown as starting while the SDK is imported.
        self._pending: dict[str, ServerConfig] = {}

    # -- from any thread -----------------------------------------------------------

    def apply(self, text: str) -> None:
        """Use the servers `text` describes from now on. Returns once the servers that changed
        or went are stopped; the new ones start behind (nothing waits for them).

        A wrong text raises McpConfigError here, before anything changes.
        """
        servers = self.prepare(text)
        self.runtime.submit(self._apply(servers)).result(APPLY_TIMEOUT)

    def prepare(self, text: str) -> dict[str, ServerConfig]:
        """The servers `text` describes, with the MCP SDK imported if there is one (seconds,
        the first time: in the caller's thread, never on the agents' loop)."""
        servers = parse_mcp_servers(text)
        if self.space is None:  # the shared one: a per-person server starts per person
            servers = {name: config for name, config in servers.items() if not config.per_user}
        if servers:
            if not self.connections:  # at start: the page shows them starting meanwhile
                self._pending = servers
            for module in _SDK_MODULES:
                importlib.import_module(module)
        return servers

    def statuses(self) -> list[ServerStatus]:
        """Each server's status, in the setting's order."""
        if self._pending:
            return [ServerStatus(name, config.transport,
                                 "disabled" if config.disabled else "starting", None, "", 0, ())
                    for name, config in self._pending.items()]  # fmt: skip
        return self.runtime.call(lambda: [c.status() for c in self.connections.values()])

    def restart(self, name: str) -> bool:
        """Restart one server now (False: no such server)."""
        return self.runtime.submit(self._restart(name)).result(APPLY_TIMEOUT)

    def stop(self, timeout: float = 15.0) -> None:
        """Stop every server (a local one's processes end with it); waits up to `timeout`."""
        try:
            self.runtime.submit(self._stop_all()).result(timeout)
        except TimeoutError:
            log.error("MCP servers did not all stop within %.0f s", timeout)

    # -- on the agents' loop ---------------------------------------------------------

    def tools(self, servers: Collection[str] | None = None) -> list[McpToolInfo]:
        """The tools of the ready servers (only those named in `servers`, if given)."""
        return [tool for name, connection in self.connections.items()
                if servers is None or name in servers
                for tool in connection.tools]  # fmt: skip

    def find(self, full_name: str) -> McpToolInfo | None:
        server, _, tool = full_name.partition(".")
        connection = self.connections.get(server)
        if connection is None:
            return None
        return next((found for found in connection.tools if found.name == tool), None)

    async def call(self, tool: McpToolInfo, arguments: dict[str, Any],
                   timeout: float) -> CallToolResult:  # fmt: skip
        connection = self.connections[tool.server]
        return await connection.call(tool.name, arguments, timeout)

    async def _apply(self, servers: dict[str, ServerConfig]) -> None:
        old = self.connections
        kept: dict[str, ServerConnection] = {}
        stopping = [c for name, c in old.items() if servers.get(name) != c.config]
        await asyncio.gather(*(connection.stop() for connection in stopping))
        for name, config in servers.items():
            connection = old.get(name)
            if connection is None or connection.config != config:
                # Imported already, by `prepare`: there is a server.
                from mcp_client.connection import ServerConnection

                connection = ServerConnection(name, config, self._policy())
                connection.start()
            kept[name] = connection
        self.connections = kept
        self._pending = {}

    def _policy(self) -> OutboundPolicy:
        """Where remote servers may be, as the settings say now (helpers/outbound.py)."""
        return policy(load_settings(), self.runtime.loopback_only, self.space)

    async def _restart(self, name: str) -> bool:
        connection = self.connections.get(name)
        if connection is None:
            return False
        await connection.stop()
        fresh = type(connection)(name, connection.config, self._policy())
        fresh.restarts = connection.restarts + 1
        fresh.start()
        self.connections = {key: fresh if key == name else value
                            for key, value in self.connections.items()}  # fmt: skip
        return True

    async def _stop_all(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections.values()))
