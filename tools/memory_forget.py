"""The `memory_forget` tool: delete the memories that match a query (every word, or by meaning)."""

from __future__ import annotations

import asyncio

from pydantic import Field

from core import memory_use
from core.tool import Response, Tool, ToolArgs
from memory import memories
from memory.store import Filter


class MemoryForgetArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=2_000)
    threshold: float = Field(default=0.75, ge=0, le=1, description="Least similarity (meaning).")
    area: str = ""
    tag: str = ""


class MemoryForget(Tool):
    Args = MemoryForgetArgs

    async def execute(self, args: MemoryForgetArgs) -> Response:
        store = await memory_use.area(self.ctx)
        found = await memories.recall(
            store, self.ctx.embed_model, args.query, 100, args.threshold,
            Filter(kind=args.area, tag=args.tag), every_word=True,
            on_usage=self.ctx.record_usage,
        )  # fmt: skip
        gone = await asyncio.to_thread(store.delete, [m.id for m in found]) if found else 0
        return Response(self.ctx.read_prompt("fw.memories_deleted.md", count=gone))
