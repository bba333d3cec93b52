"""The `memory_load` tool: recall the memories that best match a query."""

from __future__ import annotations

import json

from pydantic import Field

from core import memory_use
from core.tool import Response, Tool, ToolArgs
from memory import memories
from memory.store import Filter


class MemoryLoadArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=2_000)
    threshold: float = Field(default=0.6, ge=0, le=1, description="Least similarity (meaning).")
    limit: int = Field(default=5, ge=1, le=50)
    area: str = Field(default="", description="Only this area (main, fragments, solutions).")
    tag: str = ""


class MemoryLoad(Tool):
    Args = MemoryLoadArgs

    async def execute(self, args: MemoryLoadArgs) -> Response:
        store = await memory_use.area(self.ctx)
        found = await memories.recall(
            store, self.ctx.embed_model, args.query, args.limit, args.threshold,
            Filter(kind=args.area, tag=args.tag), on_usage=self.ctx.record_usage,
        )  # fmt: skip
        if not found:
            return Response(self.ctx.read_prompt("fw.memories_none.md", query=args.query))
        listing = [{"id": m.id, "area": m.kind, "tags": m.tags, "text": m.text} for m in found]
        return Response(json.dumps(listing, ensure_ascii=False, indent=1))
