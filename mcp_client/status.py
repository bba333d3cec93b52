"""What is known of a server without the SDK: its state, its status, the errors of a call.

Kept apart from connection.py (which imports the MCP SDK, seconds of imports)
so the web routes and the agents can name them while Cadre starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from helpers.mcp_config import Transport
from mcp_client.tools import McpToolInfo

State = Literal["disabled", "starting", "ready", "failed", "stopped"]


@dataclass(frozen=True)
class ServerStatus:
    """What the settings page shows of one server."""

    name: str
    transport: Transport
    state: State
    error: str | None
    stderr_tail: str
    restarts: int
    tools: tuple[McpToolInfo, ...]


class McpUnavailable(Exception):
    """The server cannot take calls now (starting, failed or stopped)."""


class McpTimeout(Exception):
    """A tool call ran past its timeout."""


class McpCallError(Exception):
    """The server answered a call with an error (not a result)."""
