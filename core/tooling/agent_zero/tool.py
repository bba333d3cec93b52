"""Agent Zero's `Tool` and `Response` (`python.helpers.tool`) on Cadre's tool.

An Agent Zero tool is called with the model's arguments as keywords
(`execute(self, **kwargs)`) and reads them from `self.args` as well; it takes
any argument, so its `Args` accepts every field. What it returns goes through
Cadre's tool life (log item, history, secret masking) like any other tool's.
`Response` is Cadre's own: `Response(message, break_loop)` and `additional`
mean the same in both.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict

from core.tool import Response, ToolArgs
from core.tool import Tool as CadreTool

if TYPE_CHECKING:
    from core.agent_types import LoopData
    from core.run_context import RunContext

__all__ = ["Response", "Tool"]


class AgentZeroArgs(ToolArgs):
    """Any arguments, kept as given: an Agent Zero tool checks its own."""

    model_config = ConfigDict(extra="allow")


class Tool(CadreTool):
    """Base of an Agent Zero tool: `execute(self, **kwargs)` instead of typed `Args`."""

    Args = AgentZeroArgs

    def __init__(
        self,
        ctx: RunContext,
        name: str,
        method: str | None,
        args: dict[str, Any],
        message: str,
        loop_data: LoopData | None,
        **kwargs: Any,  # Agent Zero passes extra keywords to some tools; none are needed here
    ) -> None:
        super().__init__(ctx, name, method, args, message, loop_data)

    async def call_execute(self, args: ToolArgs) -> Response:
        return await self.execute(**args.model_dump())

    async def execute(self, **kwargs: Any) -> Response:  # type: ignore[override]
        raise NotImplementedError(f"tool {self.name!r} does not implement execute()")

    async def before_execution(self, **kwargs: Any) -> None:
        await super().before_execution()

    async def after_execution(self, response: Response, **kwargs: Any) -> None:
        # Agent Zero accepts a dict or any value as the message; the model reads text.
        message: object = response.message
        if isinstance(message, dict | list):
            response.message = json.dumps(message, indent=2, ensure_ascii=False)
        elif not isinstance(message, str):
            response.message = str(message)
        await super().after_execution(response)
