"""What `code_execution_tool` and `input` share: waiting for a session's output and saying
to the model what came of it (done, exit code, a question, still running, ended)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from execution.terminal import TerminalSession
from execution.terminal_output import Collected, Timeouts
from helpers.paced_save import PacedSave

if TYPE_CHECKING:
    from core.log import LogItem
    from core.run_context import RunContext

#: Characters of output kept in the log item (the page); history gets its own cut.
LOG_LIMIT = 64_000
#: Most seconds a running command's new output waits to reach disk (a save per interval).
STREAM_SAVE_INTERVAL = 2.0


def open_log(ctx: RunContext, heading: str, args: dict[str, Any]) -> LogItem:
    """The `code_exe` item a code tool streams its output into."""
    return ctx.log_row("code_exe", heading, kvps=args)


def record(ctx: RunContext, tool_name: str, message: str, log: LogItem | None) -> None:
    """The result into history (cut there if long); the page keeps the end of a huge output."""
    ctx.add_tool_result(tool_name, message)
    if log is not None:
        log.update(content=message[-LOG_LIMIT:])


async def collect(
    ctx: RunContext, session: TerminalSession, number: int, log: LogItem | None
) -> str:
    """Wait for output under the settings' timeouts, streaming it into `log`; the result text."""
    settings = ctx.settings
    timeouts = Timeouts(
        settings.code_exec_first_output_timeout,
        settings.code_exec_between_output_timeout,
        settings.code_exec_max_timeout,
    )

    # The output so far reaches disk while the command runs, not only when the step ends.
    saving = PacedSave(ctx.progressed, STREAM_SAVE_INTERVAL)

    def show(text: str) -> None:
        if log is not None:
            log.update(content=text[-LOG_LIMIT:])
            saving.changed()

    try:
        got = await session.collect(timeouts, show)
    finally:
        await saving.close()
    return describe(ctx, got, number)


def describe(ctx: RunContext, got: Collected, number: int) -> str:
    """The output with a note of how the wait ended, from the `fw.code.*` prompts, and what
    happened meanwhile (a connection the proxy refused, a command interrupted)."""
    text = got.text.rstrip() or ctx.read_prompt("fw.code.no_output.md")
    if got.dropped:
        dropped = ctx.read_prompt("fw.code.dropped.md", chars=f"{got.dropped:,}")
        text = f"{got.before_cut}\n{dropped}\n{text}"
    if got.notices:
        text += "\n" + ctx.read_prompt("fw.code.notices.md", notices="\n".join(got.notices))
    ending = _ending(ctx, got, number)
    return f"{text}\n{ending}" if ending else text


def _ending(ctx: RunContext, got: Collected, number: int) -> str:
    """The note on how the wait ended ("" for a run done with exit code 0)."""
    if got.outcome == "done":
        code = got.exit_code
        return ctx.read_prompt("fw.code.exit_code.md", code=code) if code else ""
    if got.outcome == "question":
        return ctx.read_prompt("fw.code.question.md", session=number)
    if got.outcome == "exited":
        if got.stopped:
            return ctx.read_prompt("fw.code.stopped.md", session=number, why=got.stopped)
        code = "" if got.exit_code is None else str(got.exit_code)
        return ctx.read_prompt("fw.code.ended.md", code=code)
    settings = ctx.settings
    seconds = {
        "first_timeout": settings.code_exec_first_output_timeout,
        "idle_timeout": settings.code_exec_between_output_timeout,
        "total_timeout": settings.code_exec_max_timeout,
    }[got.outcome]
    why = ctx.read_prompt(f"fw.code.why.{got.outcome}.md", seconds=f"{seconds:g}")
    after = settings.code_exec_stop_after
    stop_after = f"{after:g}" if after else ""
    return ctx.read_prompt("fw.code.running.md", why=why, session=number, stop_after=stop_after)
