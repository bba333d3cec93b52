"""The `memory_save` tool: remember a text across chats."""

from __future__ import annotations

from pydantic import Field

from core.tool import Response, Tool, ToolArgs
from memory import memories


class MemorySaveArgs(ToolArgs):
    text: str = Field(min_length=1, max_length=20_000, description="What to remember.")
    area: str = Field(default="main", description="main, fragments or solutions.")
    tags: list[str] = Field(default_factory=list, max_length=20)


class MemorySave(Tool):
    Args = MemorySaveArgs

    async def execute(self, args: MemorySaveArgs) -> Response:
        saved = await memories.remember(self.agent, args.text, args.area, args.tags)
        return Response(self.agent.read_prompt("fw.memory_saved.md", id=saved.id))
