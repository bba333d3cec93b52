"""The `input` tool: type a line into a running code session (answers a program's question)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from core.tool import EXPANDS_SECRETS, Response, Tool, ToolArgs
from execution.terminal import SessionError
from helpers.errors import RepairableException
from tools import _code_exec as code_exec

if TYPE_CHECKING:
    from core.log import LogItem


class InputArgs(ToolArgs):
    #: Typed into a program (a password prompt, say): secret values are expanded here.
    keyboard: Annotated[str, EXPANDS_SECRETS] = Field(
        max_length=4000, description="The text to type; Enter is pressed after."
    )
    session: int = Field(default=0, ge=0, le=99, description="The session to type into.")


class InputTool(Tool):
    """Types into the session last used under a number, then collects what follows."""

    Args = InputArgs
    repeat_progress = "new_result"  # the program may answer differently

    async def execute(self, args: InputArgs) -> Response:
        session = self.ctx.code_sessions.last(self.ctx.number, args.session)
        # Only a program that runs can be answered: typed into an idle shell, the
        # text would run as a command, past any approval.
        if session is None or not session.alive or not session.busy:
            raise RepairableException(
                self.ctx.read_prompt("fw.code.no_session.md", session=args.session)
            )
        try:
            session.send(args.keyboard)
        except SessionError as exc:
            raise RepairableException(exc.told.render(self.ctx.read_prompt)) from None
        session.busy = True  # whatever was answered runs on until its marker
        return Response(await code_exec.collect(self.ctx, session, args.session, self.log))

    def get_log_object(self) -> LogItem:
        return code_exec.open_log(
            self.ctx, f"Typing into session {self.args.get('session', 0)}", self.args
        )

    async def after_execution(self, response: Response) -> None:
        code_exec.record(self.ctx, self.name, response.message, self.log)
