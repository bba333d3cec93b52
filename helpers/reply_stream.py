"""Showing a reply while it streams, and knowing when it is complete.

For every chunk the partial reply's `headline`, `thoughts` and, for the
`response` tool, its `text` are shown in the log; the intervention check
point runs; and reading stops at the end of the first complete JSON object
that names a tool, so a model that rambles on after its answer costs nothing
more. While the chat is paused, chunks are still read (a stalled connection
would be dropped by the provider) but nothing new is shown or acted on.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from helpers.extract_tools import JsonObjectScanner, extract_partial

if TYPE_CHECKING:
    from agent import Agent, LoopData

#: Seconds between two display updates of a streaming reply. Re-reading the
#: partial reply costs time linear in its length, so updating on every chunk
#: of a long reply is quadratic; a person cannot read faster than this anyway.
SHOW_INTERVAL = 0.02

GENERATING = "Generating..."


class ReplyStream:
    """The live view of one model call."""

    def __init__(self, agent: Agent, loop_data: LoopData) -> None:
        self.agent = agent
        self.loop_data = loop_data
        self.scanner = JsonObjectScanner()
        self.offset = 0  # where the current scanner started in the reply
        self.fed = 0
        self.end: int | None = None
        self.shown_at = 0.0
        self.item = agent.context.log.log(
            "agent", f"{agent.agent_name}: {GENERATING}", agentno=agent.number
        )

    async def on_chunk(self, text: str, reasoning: str) -> bool:
        """Called by the model client after each chunk; True stops the stream."""
        self.loop_data.partial_reply = text
        self._scan(text)
        if self.agent.context.paused:
            return False
        now = time.monotonic()
        if now - self.shown_at >= SHOW_INTERVAL or self.end is not None:
            self.shown_at = now
            self._show(text, reasoning)
        await self.agent.handle_intervention(text)
        return self.end is not None

    def _scan(self, text: str) -> None:
        if self.end is not None:
            return
        end = self.scanner.feed(text[self.fed :])
        self.fed = len(text)
        while end is not None:
            start = self.offset + (self.scanner.start or 0)
            if "tool" in text[start : self.offset + end]:
                self.end = self.offset + end
                return
            # Braces in prose ("I'll fill in {name}"): not the reply; read on.
            self.offset += end
            self.scanner = JsonObjectScanner()
            end = self.scanner.feed(text[self.offset :])

    def _show(self, text: str, reasoning: str) -> None:
        partial = extract_partial(text[self.offset :])
        agent = self.agent
        heading = self.item.heading
        if partial.headline:
            heading = f"{agent.agent_name}: {partial.headline}"
        kvps: dict[str, object] = {}
        if partial.thoughts:
            kvps["thoughts"] = partial.thoughts
        if reasoning:
            kvps["reasoning"] = reasoning
        if partial.tool_name:
            kvps["tool_name"] = partial.tool_name
        self.item.update(heading=heading, kvps=kvps)
        if partial.tool_name == "response" and partial.text is not None:
            if self.loop_data.response_log is None:
                self.loop_data.response_log = agent.context.log.log(
                    "response", f"{agent.agent_name}: Responding", agentno=agent.number
                )
            self.loop_data.response_log.update(content=partial.text)

    def finish(self, text: str, reasoning: str) -> str:
        """The reply as it counts: cut after the first complete object that names a tool."""
        self._scan(text)
        reply = text[: self.end] if self.end is not None else text
        self._show(reply, reasoning)
        if self.item.heading.endswith(GENERATING):
            self.item.update(heading=f"{self.agent.agent_name}: (no usable reply)")
        return reply

    def close(self, why: str) -> None:
        """The iteration ended without its tool completing: say so on what it showed."""
        if self.item.heading.endswith(GENERATING):
            self.item.update(heading=f"{self.agent.agent_name}: {why.capitalize()}")
        self.item.update(kvps={"status": why})
        if self.loop_data.response_log is not None:
            self.loop_data.response_log.update(kvps={"status": why})
