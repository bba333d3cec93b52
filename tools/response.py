"""The `response` tool: the agent's final answer, which ends its monologue."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from helpers.tool import Response, Tool, ToolArgs

if TYPE_CHECKING:
    from helpers.log import LogItem


class ResponseArgs(ToolArgs):
    text: str = Field(description="The final answer, in markdown.")


class ResponseTool(Tool):
    """Answers the user (or the superior agent) and ends the loop."""

    Args = ResponseArgs

    async def execute(self, args: ResponseArgs) -> Response:
        return Response(message=args.text, break_loop=True)

    def get_log_object(self) -> LogItem:
        # The reply streamed into a live `response` item already; finish that one.
        live = self.loop_data.response_log if self.loop_data else None
        if live is not None:
            return live
        return self.agent.context.log.log(
            "response", f"{self.agent.agent_name}: Responding", agentno=self.agent.number
        )

    async def after_execution(self, response: Response) -> None:
        # The answer is already in history as the model's own reply; it is
        # not repeated as a tool result.
        if self.log is not None:
            self.log.update(content=response.message)
