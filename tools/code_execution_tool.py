"""The `code_execution_tool`: run code in persistent terminal, Python or Node.js sessions.

Output streams live into a `code_exe` log item. A call returns when the code
is done, when the program asks a question, or when a timeout passes (the
program keeps running; `output` collects more later, `reset` kills it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from core.tool import EXPANDS_SECRETS, Response, Tool, ToolArgs
from execution.terminal import SessionError
from helpers import outbound
from helpers.errors import RepairableException
from helpers.outbound import OutboundPolicy
from tools import _code_exec as code_exec

if TYPE_CHECKING:
    from core.log import LogItem


class CodeExecutionArgs(ToolArgs):
    runtime: Literal["terminal", "python", "nodejs", "output", "reset"] = Field(
        description="terminal (bash), python, nodejs; output: more of a running one; reset: kill."
    )
    #: The one argument that carries secret values: the program needs them.
    code: Annotated[str, EXPANDS_SECRETS] = Field(
        default="", description="The code to run (terminal, python, nodejs)."
    )
    session: int = Field(default=0, ge=0, le=99, description="Session number; each keeps state.")


class CodeExecutionTool(Tool):
    """Runs code in a numbered, persistent session and reports its output."""

    Args = CodeExecutionArgs
    repeat_progress = "new_result"  # the same command may print something new

    async def execute(self, args: CodeExecutionArgs) -> Response:
        sessions = self.ctx.code_sessions
        if args.runtime == "reset":
            ended = sessions.reset(self.ctx.number, args.session)
            return Response(self.prompt("fw.code.reset.md", session=args.session, ended=ended))
        if args.runtime == "output":
            session = sessions.last(self.ctx.number, args.session)
            if session is None or not session.alive or not session.busy:
                raise RepairableException(
                    self.prompt("fw.code.no_session.md", session=args.session)
                )
            return Response(await code_exec.collect(self.ctx, session, args.session, self.log))
        if not args.code.strip():
            raise RepairableException(self.prompt("fw.code.code_missing.md", runtime=args.runtime))
        try:
            session, how, _ = await sessions.get(
                self.ctx.number, args.session, args.runtime, self.ctx.settings,
                self.outbound_policy, self.ctx.space,
            )  # fmt: skip
        except SessionError as exc:
            raise RepairableException(exc.told.render(self.ctx.read_prompt)) from None
        if session.busy:
            raise RepairableException(self.prompt("fw.code.busy.md", session=args.session))
        session.run_file(args.code, how.suffix, lambda path: how.command.format(path=path))
        return Response(await code_exec.collect(self.ctx, session, args.session, self.log))

    def asks_approval(self, args: CodeExecutionArgs) -> bool:
        """Only code to run is an action the tool policy (and code_exec_confirm) decides on:
        reading a session's output or ending it is not."""
        return args.runtime in ("terminal", "python", "nodejs") and bool(args.code.strip())

    def outbound_policy(self) -> OutboundPolicy:
        """What the commands' connections are checked by, read at each connection: the
        settings of now, and where Cadre serves (helpers/outbound.py)."""
        runtime = self.ctx.runtime
        loopback_only = runtime.loopback_only if runtime is not None else True
        return outbound.policy(self.ctx.settings, loopback_only, self.ctx.space)

    def prompt(self, name: str, **kwargs: object) -> str:
        return self.ctx.read_prompt(name, **kwargs)

    def get_log_object(self) -> LogItem:
        return code_exec.open_log(
            self.ctx, f"Running {self.args.get('runtime', 'code')}", self.args
        )

    async def after_execution(self, response: Response) -> None:
        code_exec.record(self.ctx, self.name, response.message, self.log)
