"""The `notify_user` tool: a notice shown to the user at once, whichever chat they look at.

Cadre's own tool, shipped as the plugin plugins/notify_user (switched off, agents lack it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.tool import Response, Tool, ToolArgs


class NotifyArgs(ToolArgs):
    message: str = Field(description="What to tell the user.")
    title: str = Field(default="", description="A short title.")
    type: Literal["info", "success", "warning", "error"] = "info"


class NotifyUser(Tool):
    """Logs a `notify` item; the page shows it as a notification and keeps it in the log."""

    Args = NotifyArgs

    async def execute(self, args: NotifyArgs) -> Response:
        self.ctx.log.log(
            "notify",
            args.title or f"{self.ctx.name} says",
            args.message,
            kvps={"type": args.type},
            agentno=self.ctx.number,
        )
        return Response(self.ctx.read_prompt("fw.notified.md"))
