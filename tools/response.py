"""The `response` tool: the agent's final answer, which ends its monologue."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from core.prompt import untrusted
from core.tool import Response, Tool, ToolArgs
from helpers.errors import RepairableException

if TYPE_CHECKING:
    from core.log import LogItem


#: Longest answer, in characters: a longer one is sent back to the model to shorten (it
#: may write a file and cite it with §§include). A small model's answer is held to far
#: less by its reply schema (`reply_schema.SMALL_ANSWER_LENGTH`).
ANSWER_MAX = 20_000


class ResponseArgs(ToolArgs):
    text: str = Field(description="The final answer, in markdown.")


class ResponseTool(Tool):
    """Answers the user (or the superior agent) and ends the loop."""

    Args = ResponseArgs

    async def expand_includes(self) -> None:
        # The length the model wrote counts, not that of a file it cites with §§include.
        text = self.args.get("text")
        if isinstance(text, str) and len(text) > ANSWER_MAX:
            raise RepairableException(
                self.ctx.read_prompt(
                    "fw.answer_too_long.md", length=f"{len(text):,}", limit=f"{ANSWER_MAX:,}"
                )
            )
        await super().expand_includes()

    async def execute(self, args: ResponseArgs) -> Response:
        text = args.text
        if self.ctx.number == 0:
            # For a person: a result cited with §§include was saved marked for the model
            # (core/prompt/untrusted.py); they read it as its source gave it. A superior
            # gets its subordinate's answer marked, as text from outside stays for a model.
            text = untrusted.unmarked(text)
        return Response(message=text, break_loop=True)

    def get_log_object(self) -> LogItem:
        # The reply streamed into a live `response` item already; finish that one.
        live = self.loop_data.response_log if self.loop_data else None
        if live is not None:
            return live
        return self.ctx.log_row("response", "Responding")

    async def after_execution(self, response: Response) -> None:
        # The answer is already in history as the model's own reply; it is
        # not repeated as a tool result.
        if self.log is not None:
            self.log.update(content=response.message)
