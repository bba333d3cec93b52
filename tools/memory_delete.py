"""The `memory_delete` tool: delete memories by id."""

from __future__ import annotations

import asyncio

from pydantic import Field

from core.tool import Response, Tool, ToolArgs
from memory import memories


class MemoryDeleteArgs(ToolArgs):
    ids: list[str] = Field(min_length=1, max_length=100)


class MemoryDelete(Tool):
    Args = MemoryDeleteArgs

    async def execute(self, args: MemoryDeleteArgs) -> Response:
        store = await memories.agent_area(self.agent)
        gone = await asyncio.to_thread(store.delete, args.ids)
        return Response(self.agent.read_prompt("fw.memories_deleted.md", count=gone))
