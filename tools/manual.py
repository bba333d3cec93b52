"""The `manual` tool: the whole manual of one of the agent's tools, when it asks for it.

The system prompt lists each tool on one line (core/prompt/tool_manuals.py); a tool's manual
joins it after the tool's first call or a wrong one, and here whenever the agent wants
it before a call: given as the result, and in the prompt from then on.
"""

from __future__ import annotations

from pydantic import Field

from core.prompt import tool_manuals
from core.prompt.system_prompt import mcp_manual
from core.tool import Response, Tool, ToolArgs
from core.tooling import tool_offer
from helpers.errors import RepairableException


class ManualArgs(ToolArgs):
    tool: str = Field(description="The tool's name, as the list of tools names it.")


class Manual(Tool):
    """Returns a tool's manual, and notes it read (it does not come again with a result)."""

    Args = ManualArgs

    async def execute(self, args: ManualArgs) -> Response:
        name = args.tool.strip().split(":", 1)[0]  # `browser:open` names the browser's
        mcp = {tool.full_name: tool for tool in tool_offer.mcp_tools(self.ctx)}
        if name in mcp:
            tool_manuals.mark_read(self.ctx, name)
            return Response(mcp_manual(self.ctx, mcp[name]))
        offered = self.ctx.available_tools()
        if name not in offered or not self.ctx.prompt_exists(tool_manuals.file_of(name)):
            raise RepairableException(
                self.ctx.read_prompt(
                    "fw.tool_not_found.md", tool_name=name, tools=", ".join(offered)
                )
            )
        tool_manuals.mark_read(self.ctx, name)
        return Response(tool_manuals.manual(self.ctx, name))
