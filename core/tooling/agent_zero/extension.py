"""Agent Zero's `helpers.extension.Extension`: the base of an extension Cadre runs.

An Agent Zero extension is a file in `<point>/` holding a class derived from
`Extension` with `execute(self, **kwargs)` (a coroutine, or a plain function at the
points Agent Zero calls without awaiting). It is made with the agent (`self.agent`,
Cadre's `Agent`: `agent_name`, `number`, `context`, `data`, `read_prompt`,
`hist_add_*` as Agent Zero names them) and called with the point's keywords
(docs/architecture.md, "Agent Zero's extension points").
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.agent import Agent

__all__ = ["Extension"]


class Extension:
    """Base class of an Agent Zero extension."""

    def __init__(self, agent: Agent | None, **kwargs: Any) -> None:
        self.agent = agent
        self.kwargs = kwargs

    def execute(self, **kwargs: Any) -> Awaitable[None] | None:
        """Do the extension's work; the keywords are the point's (see the module docstring)."""
        return None
