"""The `memory_save` tool: remember a text across chats."""

from __future__ import annotations

from pydantic import Field

from helpers import memory
from helpers.tool import Response, Tool, ToolArgs


class MemorySaveArgs(ToolArgs):
    text: str = Field(min_length=1, max_length=20_000, description="What to remember.")
    area: str = Field(default="main", description="main, fragments or solutions.")
    tags: list[str] = Field(default_factory=list, max_length=20)


class MemorySave(Tool):
    Args = MemorySaveArgs

    async def execute(self, args: MemorySaveArgs) -> Response:
        store = await memory.agent_area(self.agent)
        source = f"chat {self.agent.context.id}"
        saved = await memory.save(
            store, self.agent.config.embed_model, args.text, args.area, source, args.tags
        )
        return Response(self.agent.read_prompt("fw.memory_saved.md", id=saved.id))
