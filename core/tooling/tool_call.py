"""One tool call of the loop: the tool the reply names, found and run.

A tool that is not offered to the agent (or does not exist) is a repairable
problem naming the tools there are (one that is there but cannot be used says
why: core/tooling/tool_status.py); an MCP server's tool (`<server>.<tool>`)
runs as an `McpTool`; a tool that crashes is reported to the
model; a nudge cuts a running tool short (core/interventions.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from core import interventions
from core.events import ToolStarted
from core.tooling import tool_offer
from core.tooling.tool_loader import cached_tool_class, find_tool_file, load_tool_class
from helpers.errors import CadreError, RepairableException

if TYPE_CHECKING:
    from core.agent import Agent
    from core.agent_types import LoopData
    from core.reply.extract_tools import AgentReply
    from core.tool import Response, Tool

log = logging.getLogger(__name__)


async def find_tool(agent: Agent, reply: AgentReply, text: str, loop_data: LoopData) -> Tool:
    """The tool `reply` calls, ready to run (RepairableException: no such tool here)."""
    path = None
    offered = agent.available_tools()
    if reply.tool_name in offered:  # a tool not offered is not called either
        found = tool_offer.mcp_tool(agent.ctx, reply.tool_name)
        if found is not None:
            # Imported here: it needs the MCP SDK, loaded only when a server is set up.
            from core.tooling.mcp_tool import McpTool

            supervisor, info = found
            return McpTool(agent.ctx, info, supervisor, reply.tool_args, text, loop_data)
        path = find_tool_file(agent.config.profile, reply.tool_name, agent.chat.project_ref)
    if path is None:
        unavailable = tool_offer.unavailable_tools(agent).get(reply.tool_name)
        if unavailable:
            raise RepairableException(
                agent.read_prompt(
                    "fw.tool_unavailable.md",
                    tool_name=reply.tool_name,
                    reason=unavailable,
                    tools=", ".join(offered),
                )
            )
        raise RepairableException(
            agent.read_prompt(
                "fw.tool_not_found.md", tool_name=reply.tool_name, tools=", ".join(offered)
            )
        )
    # Importing a tool file is slow: off the loop, unless it is already loaded.
    tool_class = cached_tool_class(path) or await asyncio.to_thread(load_tool_class, path)
    name, method = reply.tool_name, reply.tool_method
    return tool_class(agent.ctx, name, method, reply.tool_args, text, loop_data)


async def run_tool(agent: Agent, tool: Tool) -> Response:
    """Run a tool (a nudge cuts it short); a crash is reported to the model."""
    events = agent.chat.events
    if events.wants(ToolStarted):  # tracing listens (core/tracing/): the call's arguments
        await events.emit(ToolStarted(agent.ctx, tool.full_name, dict(tool.args)))
    try:
        return await interventions.interruptible(agent, tool.run(), agent.nudge_wake)
    except (CadreError, asyncio.CancelledError):
        raise
    except Exception as exc:
        log.exception("tool %s failed", tool.full_name)
        raise RepairableException(
            agent.read_prompt(
                "fw.tool_error.md", tool_name=tool.full_name, error=f"{type(exc).__name__}: {exc}"
            )
        ) from exc
