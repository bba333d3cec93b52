"""Showing a reply while it streams, and knowing when it is complete.

For every chunk the partial reply's `headline`, `thoughts` and, for the
`response` tool, its `text` are shown in the log; the intervention check
point runs; and reading stops at the end of the first complete JSON object,
so a model that rambles on after its answer costs nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helpers.extract_tools import JsonObjectScanner, extract_partial

if TYPE_CHECKING:
    from agent import Agent, LoopData


class ReplyStream:
    """The live view of one model call."""

    def __init__(self, agent: Agent, loop_data: LoopData) -> None:
        self.agent = agent
        self.loop_data = loop_data
        self.scanner = JsonObjectScanner()
        self.end: int | None = None
        self.fed = 0
        self.item = agent.context.log.log(
            "agent", f"{agent.agent_name}: Generating...", agentno=agent.number
        )

    async def on_chunk(self, text: str, reasoning: str) -> bool:
        """Called by the model client after each chunk; True stops the stream."""
        self.loop_data.partial_reply = text
        if self.end is None:
            self.end = self.scanner.feed(text[self.fed :])
            self.fed = len(text)
        self._show(text, reasoning)
        await self.agent.handle_intervention(text)
        return self.end is not None

    def _show(self, text: str, reasoning: str) -> None:
        partial = extract_partial(text)
        agent = self.agent
        heading = (
            f"{agent.agent_name}: {partial.headline}" if partial.headline else self.item.heading
        )
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
        """The reply as it counts: cut after the first complete JSON object."""
        if self.end is None:
            self.end = JsonObjectScanner().feed(text)
        reply = text[: self.end] if self.end is not None else text
        self._show(reply, reasoning)
        if not self.item.kvps.get("tool_name") and self.item.heading.endswith("Generating..."):
            self.item.update(heading=f"{self.agent.agent_name}: (no usable reply)")
        return reply
