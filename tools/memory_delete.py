"""The `memory_delete` tool: delete memories by id."""

from __future__ import annotations

import asyncio

from pydantic import Field

from core import memory_use
from core.tool import Response, Tool, ToolArgs


class MemoryDeleteArgs(ToolArgs):
    ids: list[str] = Field(min_length=1, max_length=100)


class MemoryDelete(Tool):
    Args = MemoryDeleteArgs

    async def execute(self, args: MemoryDeleteArgs) -> Response:
        store = await memory_use.area(self.ctx)
        gone = await asyncio.to_thread(store.delete, args.ids)
        return Response(self.ctx.read_prompt("fw.memories_deleted.md", count=gone))
