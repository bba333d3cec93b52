"""The `search_engine` tool: web search through a SearXNG instance (setting searxng_url).

Its results (the pages' titles, addresses and snippets) are marked in history as text from
outside, from the search engine's address (core/prompt/untrusted.py).
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
import urllib.request

from pydantic import Field

from core.tool import Response, Tool, ToolArgs
from helpers.errors import RepairableException

TIMEOUT = 20.0


class SearchArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=500)
    limit: int = Field(default=5, ge=1, le=20)


class SearchEngine(Tool):
    Args = SearchArgs

    async def execute(self, args: SearchArgs) -> Response:
        base = self.ctx.settings.searxng_url.rstrip("/")
        if not base:
            return Response(self.ctx.read_prompt("fw.search_none.md"))
        url = f"{base}/search?" + urllib.parse.urlencode({"q": args.query, "format": "json"})
        try:
            data = await asyncio.to_thread(_fetch_json, url)
        except (OSError, ValueError) as exc:
            raise RepairableException(
                self.ctx.read_prompt("fw.search_failed.md", base=base, error=exc)
            ) from None
        results = [
            {"title": r.get("title", ""), "url": r.get("url", ""), "content": r.get("content", "")}
            for r in data.get("results", [])[: args.limit]
        ]
        if not results:
            return Response(self.ctx.read_prompt("fw.search_no_results.md", query=args.query))
        # Titles and snippets are the pages' words: marked as text from the search engine.
        return Response(json.dumps(results, ensure_ascii=False, indent=1), source=base)


def _fetch_json(url: str) -> dict:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:  # noqa: S310 - the user's own URL
        return json.loads(answer.read(5_000_000))
