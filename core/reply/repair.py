"""What goes wrong in an iteration is told to the model; a model that cannot recover is stopped.

A repairable problem (a malformed reply, an unknown tool, bad arguments, an
exhausted budget, a subordinate that failed) becomes a warning in the agent's
history and one row in the log that counts up while problems follow in a row;
`max_unusable_replies` in a row end the run. A call that repeats an earlier one
with the same arguments is no progress: warned, and stopped after
`max_repeated_calls`. See docs/architecture.md (the loop).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.agent_types import is_small
from core.prompt import untrusted
from helpers.errors import BudgetExhausted, RepairableException, ReplyTooLong, RunError

if TYPE_CHECKING:
    from core.agent import Agent
    from core.reply.reply_stream import ReplyStream
    from core.tool import Response, Tool

#: The warning under a rejected step whose row says why (the person's words; the model
#: was told the reason itself).
RETRIED = (
    "The step above says why its reply could not be used. Cadre told the model and asked "
    "again; after {limit} unusable replies in a row the run stops."
)


def handle_repairable(
    agent: Agent, exc: RepairableException, step: ReplyStream | None = None
) -> None:
    """Tell the model what went wrong; stop a model that keeps failing.

    The reply's own row (`step`, when the problem came from a model call) keeps the
    reason and what the model sent. Problems in a row share one warning in the log,
    updated with each, so a model that fails shows one row that counts up, then one
    plain error; where a step's row holds the reason, the warning says what follows.
    """
    if not isinstance(exc, BudgetExhausted):  # the model did nothing wrong there
        agent.unusable_replies += 1
    agent.add_warning(str(exc))
    heading = "Unusable reply"
    if isinstance(exc, BudgetExhausted):
        heading = "Budget exhausted"
    elif isinstance(exc.__cause__, ReplyTooLong):
        heading = "Reply too long"
    limit = agent.config.settings.max_unusable_replies
    content = untrusted.unmarked(str(exc))  # the marking of text from outside is the model's
    if step is not None:
        step.rejected(content)
        content = RETRIED.format(limit=limit)
    if agent.repair_item is not None and agent.unusable_replies > 1:
        heading = f"{heading} ({agent.unusable_replies} of {limit} in a row)"
        agent.repair_item.update(heading=f"{agent.agent_name}: {heading}", content=content)
    else:
        agent.repair_item = agent.chat.log.log(
            "warning", f"{agent.agent_name}: {heading}", content, agentno=agent.number
        )
    if agent.unusable_replies >= limit:
        raise RunError(
            f"{agent.agent_name} could not do this: {limit} unusable replies in a row "
            f"(the last: {exc}). " + give_up_hint(agent)
        )


def check_progress(agent: Agent, tool: Tool, response: Response) -> None:
    """A call that repeats an earlier one is no progress: warn, and stop after a few."""
    if tool.repeat_progress == "always":
        agent.unusable_replies, agent.repair_item = 0, None
        return
    result = response.message if tool.repeat_progress == "new_result" else None
    if not agent.loop_guard.record(tool.full_name, tool.args, result):
        agent.unusable_replies, agent.repair_item = 0, None  # a new step: progress
        return
    limit = agent.config.settings.max_repeated_calls
    if agent.loop_guard.repeats >= limit:
        tools = ", ".join(agent.loop_guard.repeated_tools)
        raise RunError(
            f"{agent.agent_name} stopped going round in circles: {limit} calls repeated "
            f"earlier ones with the same arguments ({tools}) without getting further. "
            + give_up_hint(agent)
        )
    agent.add_warning(agent.read_prompt("fw.msg_no_progress.md", tool_name=tool.full_name))


def give_up_hint(agent: Agent) -> str:
    """What the user can do when this agent's model could not do the task."""
    if is_small(agent.config.chat_model):
        return (
            "The model may be too small for this task: ask again more simply, "
            "or choose a larger model in Settings."
        )
    return "Ask again in other words, or with more detail."
