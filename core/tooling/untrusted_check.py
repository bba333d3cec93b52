"""The optional check of text from outside: does a result try to give the agent orders?

Off by default (setting `untrusted_check`). When on, each tool result that came from
outside (core/tool.py `Response.source`, marked in history by core/prompt/untrusted.py)
is shown to the utility model, marked as data itself, with `fw.untrusted.check.sys.md`;
it answers with a small JSON object, `{"instructs": true|false, "passage": "..."}`. The
call is logged and counted as every utility call (`RunContext.call_utility_model`).

A flagged result is shown to the person in the log: a `warning` row naming the tool and
the source and quoting the passage. The agent is told too (`fw.untrusted.flagged.md`, a
warning in its history). Then, by the setting `untrusted_flagged`:

- "pause" (the default): the chat is paused as the Pause button pauses it, so the loop
  waits at its next check point (before its next model call) until the person resumes
  or stops the run: no new kind of hold, and the page already shows a paused run;
- "continue": the run goes on.

A check that cannot be made (the utility model failed, or said something that is not the
JSON asked for) flags nothing: the result is still marked as data, and the log says the
check did not run, so a person knows it was not made.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from core.prompt import untrusted
from core.run_context import agent_of
from helpers.errors import RunError, UserError
from helpers.json_scan import LENIENT_JSON

if TYPE_CHECKING:
    from core.run_context import RunContext

log = logging.getLogger(__name__)

#: Most characters of a result shown to the utility model (its head and tail).
TEXT_LIMIT = 20_000
#: Most characters of the flagged passage shown in the log and told to the agent.
PASSAGE_LIMIT = 500
#: The utility model's answer is a small object: a short reply is enough.
MAX_TOKENS = 300


async def check(ctx: RunContext, tool_name: str, source: str, text: str) -> bool:
    """Whether `text` (what `tool_name` got from `source`) was flagged; False when the
    check is off. A flagged result is logged, told to the agent, and pauses the run
    when the settings say so."""
    if not ctx.settings.untrusted_check or not text.strip():
        return False
    shown = untrusted.mark(_fit(text), tool_name, source)
    try:
        reply = await ctx.call_utility_model(
            ctx.read_prompt("fw.untrusted.check.sys.md"),
            ctx.read_prompt(
                "fw.untrusted.check.msg.md", tool_name=tool_name, source=source, text=shown
            ),
            heading=f"{ctx.name}: Checking text from {source[:80]} for orders",
            max_tokens=MAX_TOKENS,
        )
    except (RunError, UserError) as exc:  # UserError: a utility model its client cannot call
        log.warning("chat %s: the check of %s from %s failed: %s", ctx.chat_id, tool_name,
                    source, exc)  # fmt: skip
        _not_checked(ctx, tool_name, source, str(exc))
        return False
    verdict = _verdict(reply)
    if verdict is None:
        log.warning("chat %s: the check of %s from %s answered no verdict: %r", ctx.chat_id,
                    tool_name, source, reply[:200])  # fmt: skip
        _not_checked(ctx, tool_name, source, "the utility model's answer was not a verdict")
        return False
    instructs, passage = verdict
    if instructs:
        _flagged(ctx, tool_name, source, passage or _fit(text, PASSAGE_LIMIT))
    return instructs


def _fit(text: str, limit: int = TEXT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    head = limit // 3
    return f"{text[:head]}\n[…]\n{text[-(limit - head) :]}"


def _verdict(reply: str) -> tuple[bool, str] | None:
    """(instructs, passage) from the utility model's reply, or None when it holds none."""
    start = reply.find("{")
    if start < 0:
        return None
    try:
        data: Any = LENIENT_JSON.raw_decode(reply, start)[0]
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("instructs"), bool):
        return None
    passage = data.get("passage")
    return data["instructs"], str(passage).strip() if passage else ""


def _flagged(ctx: RunContext, tool_name: str, source: str, passage: str) -> None:
    passage = _fit(passage, PASSAGE_LIMIT)
    pause = ctx.settings.untrusted_flagged == "pause"
    then = ("The run is paused: resume it to let the agent go on (it has been told not to "
            "obey this text), or stop it." if pause else
            "The run goes on: the agent has been told not to obey this text.")  # fmt: skip
    ctx.log_row(
        "warning",
        "Text from outside tries to give the agent orders",
        f"The result of {tool_name} from {source} tries to give the agent orders: "
        f"«{passage}». {then}",
        kvps={
            "source": source,
            "tool": tool_name,
            "passage": passage,
            "untrusted": "paused" if pause else "continued",
        },
    )
    log.warning("chat %s: %s from %s flagged as giving orders (%s)", ctx.chat_id, tool_name,
                source, "paused" if pause else "continued")  # fmt: skip
    # The passage is the page's words (or what the checking model, which read the page,
    # chose to quote): inside the framework's warning it stays marked as data, or the page
    # could close the warning's quotes and speak as the framework.
    quoted = untrusted.mark(passage, tool_name, source)
    ctx.add_warning(
        ctx.read_prompt(
            "fw.untrusted.flagged.md", tool_name=tool_name, source=source, passage=quoted
        )
    )
    if pause:
        agent_of(ctx).chat.pause()


def _not_checked(ctx: RunContext, tool_name: str, source: str, why: str) -> None:
    ctx.log_row(
        "warning",
        "Text from outside not checked",
        f"The result of {tool_name} from {source} could not be checked for orders ({why}). "
        "It reached the agent marked as text from outside all the same.",
        kvps={"source": source, "tool": tool_name, "untrusted": "not checked"},
    )
