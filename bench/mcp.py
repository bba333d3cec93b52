"""MCP client: prompt tokens each MCP tool adds, and how soon a server's tools are there.

Tokens (cl100k): the MCP section of the system prompt for the test server's
tools (tests/support/mcp_server.py, listed from the running server) and for
40 tools shaped like a typical file-system server's (a sentence or two of
description, two or three arguments, some described), against the system
prompt of Agent 0 without them. Times: from starting a real `run_ui.py` to
its MCP server's tools being listed in /api/mcp/servers, and, in process,
from applying the setting to a stdio or a streamable-HTTP server being ready.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.harness import Row
from helpers.runtime import AgentRuntime
from mcp_client.supervisor import McpSupervisor
from mcp_client.tools import McpToolInfo
from models.tokens import count_tokens
from tests.support.mcp_servers import HttpMcpServer, servers_text, stdio_entry
from tests.support.server_process import ServerProcess, server_env

#: Per-tool target of the issue: a typical tool under 60 tokens.
TARGET = 60


def typical_tools(count: int) -> list[McpToolInfo]:
    """`count` tools shaped like a file-system server's."""
    verbs = ["read", "write", "list", "move", "search", "stat", "copy", "delete"]
    tools = []
    for n in range(count):
        verb = verbs[n % len(verbs)]
        schema = {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path inside the allowed folders"},
                "pattern": {"type": "string"},
                "recursive": {"type": "boolean", "default": False},
            },
            "required": ["path"],
        }
        description = (f"{verb.title()} files or folders under the given path. Only works "
                       "within allowed directories; returns a short report.")  # fmt: skip
        tools.append(McpToolInfo("files", f"{verb}_{n}", description, schema))
    return tools


def _agent():  # type: ignore[no-untyped-def]
    from core.chat import Chat
    from initialize import agent_config

    # A provider's model: the full prompt (a local one gets the small model's prompt).
    return Chat(agent_config({"chat_model": "openai/gpt-4.1-mini"}), None).agent0


def per_tool(tools: list[McpToolInfo]) -> tuple[float, int]:
    """(tokens per tool, tokens of the whole MCP section) for `tools`."""
    from core.prompt import system_prompt

    agent = _agent()
    section = system_prompt.mcp_section(agent, tools)
    header = system_prompt.mcp_section(agent, tools[:1])
    one = count_tokens(header)
    # The section's fixed lines are paid once; the rest is per tool.
    each = (count_tokens(section) - one) / max(1, len(tools) - 1)
    return each, count_tokens(section)


def base_prompt_tokens() -> int:
    from core.prompt import system_prompt

    return count_tokens(asyncio.run(system_prompt.build_system_prompt(_agent())))


def listed_tools(folder: Path) -> tuple[list[McpToolInfo], float, float]:
    """The test server's tools, and seconds from `apply` to ready over stdio and HTTP."""
    runtime = AgentRuntime().start()
    supervisor = runtime.provide(McpSupervisor(runtime))
    remote = HttpMcpServer(folder).wait_ready()
    try:
        times = []
        for entry in (stdio_entry(folder / "local.pid"), {"url": remote.url}):
            began = time.monotonic()
            supervisor.apply(servers_text(one=entry))
            while supervisor.connections["one"].state != "ready":
                if time.monotonic() - began > 60:
                    raise RuntimeError("the MCP server did not come up in 60 s")
                time.sleep(0.005)
            times.append(supervisor.connections["one"].ready_at - began)
            tools = runtime.call(supervisor.tools)
            supervisor.apply("")
    finally:
        supervisor.stop()
        runtime.stop()
        remote.stop()
    return tools, times[0], times[1]


def cadre_start_to_tools(folder: Path) -> tuple[float, float]:
    """Seconds from starting run_ui.py to /health answering, and to its stdio server's
    tools listed in the API."""
    env = {**server_env(), "CADRE_MCP_SERVERS": servers_text(one=stdio_entry(folder / "p.pid"))}
    server = ServerProcess(env, folder / "server.log")
    began = time.monotonic()
    server.start(timeout=60)
    health = time.monotonic() - began
    try:
        while time.monotonic() - began < 120:
            with urllib.request.urlopen(f"{server.url}/api/mcp/servers", timeout=10) as answer:
                [status] = json.loads(answer.read())["servers"]
            if status["tools"]:
                return health, time.monotonic() - began
            time.sleep(0.01)
        raise RuntimeError("run_ui.py's MCP server was not ready in 120 s")
    finally:
        server.stop()


def run(quick: bool) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="cadre-bench-mcp-") as scratch:
        folder = Path(scratch)
        tools, stdio_ready, http_ready = listed_tools(folder)
        health, started = cadre_start_to_tools(folder)
    test_each, _ = per_tool(tools)
    typical_each, forty = per_tool(typical_tools(40))
    base = base_prompt_tokens()
    test_row = f"MCP prompt tokens per tool (test server, {len(tools)} tools)"
    growth = 100 * forty / base
    return [
        Row(test_row, test_each, "tokens", TARGET),
        Row("MCP prompt tokens per tool (40 typical tools)", typical_each, "tokens", TARGET),
        Row("system prompt growth with 40 MCP tools", growth, "%", 100, note=f"base {base}"),
        Row("Cadre start to /health (MCP server set)", health, "s"),
        Row("Cadre start to an MCP server's tools listed (stdio)", started, "s"),
        Row("MCP setting applied to tools listed: stdio server", stdio_ready, "s"),
        Row("MCP setting applied to tools listed: streamable HTTP", http_ready, "s"),
    ]
