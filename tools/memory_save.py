"""The `memory_save` tool: remember a text across chats."""

from __future__ import annotations

from pydantic import Field

from core import memory_use
from core.tool import Response, Tool, ToolArgs


class MemorySaveArgs(ToolArgs):
    text: str = Field(min_length=1, max_length=20_000, description="What to remember.")
    area: str = Field(default="main", description="main, fragments or solutions.")
    tags: list[str] = Field(default_factory=list, max_length=20)


class MemorySave(Tool):
    Args = MemorySaveArgs

    async def execute(self, args: MemorySaveArgs) -> Response:
        saved = await memory_use.remember(self.ctx, args.text, args.area, args.tags)
        return Response(self.ctx.read_prompt("fw.memory_saved.md", id=saved.id))
