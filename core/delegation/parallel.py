"""Siblings: several subordinates of one agent working at the same time.

`call_subordinates` (core/delegation/call_many.py) makes the siblings and runs
them here; a chat restored mid-batch runs the unfinished ones here too
(core/delegation/resume.py). Each sibling runs as its own asyncio task on the agents'
loop, through the one delegation path (`handover.run_subordinate`): a sibling
that fails hands up the report of its failure, the others go on. A finished
sibling keeps its handover (`Agent.handed`, saved) until the superior has
every answer, so a restart never runs finished work again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from core.delegation.handover import Handover, run_subordinate
from core.log import SPEAKER

if TYPE_CHECKING:
    from core.agent import Agent

#: The name of the tool whose result a batch's answers are (live and restored alike).
TOOL_NAME = "call_subordinates"

#: How one sibling's answer comes: its monologue, or a resume of its own delegations.
Work = Callable[["Agent"], Awaitable[str]]


def batch_pending(superior: Agent, owed: list[Agent]) -> bool:
    """`superior` delegated to siblings whose answers it has not all received yet: one
    has handed up, or one still owes its answer (is in `owed`)."""
    owed_ids = {id(a) for a in owed}
    siblings = [s for s in superior.subordinates if s.sibling]
    if len(siblings) < 2:  # one left alone, by call_subordinate: an ordinary subordinate
        return False
    return any(s.handed is not None or id(s) in owed_ids for s in siblings)


async def run_siblings(superior: Agent, work: Work | None = None) -> list[Handover]:
    """Run every sibling of `superior` that has not handed up yet, all at once; each
    sibling's handover, in their order. Stopping the run stops all of them."""
    siblings = list(superior.subordinates)

    async def one(sibling: Agent) -> Handover:
        # Items this task logs for the sibling's number name the sibling (core/log.py).
        SPEAKER.set((sibling.number, sibling.agent_name))
        if sibling.handed is None:
            run = (lambda: work(sibling)) if work is not None else None
            sibling.handed = await run_subordinate(superior, sibling, run)
            _after_one(superior)
            await sibling.progressed()  # its answer on disk before the others end
        return sibling.handed

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(s), name=f"sibling {s.agent_name}") for s in siblings]
    except asyncio.CancelledError:
        # Stopped by the user: this batch is over, its answers go nowhere (a process
        # that dies never gets here, so a restore still finds them).
        for sibling in siblings:
            sibling.handed = None
        raise
    return [task.result() for task in tasks]


def _after_one(superior: Agent) -> None:
    """A sibling has ended: the chat's working agent is one still at work, if any."""
    context = superior.chat
    working = context.working_agents()
    context.working_agent = working[-1] if working else superior


def batch_result(superior: Agent, handovers: list[Handover]) -> Handover:
    """Every sibling's answer (or failure), labelled with its name and profile, in task
    order, as one tool result; the siblings' handovers are consumed."""
    parts = []
    for sibling, handed in zip(superior.subordinates, handovers, strict=True):
        prompt = f"fw.call_subordinates.{'failed' if handed.failed else 'answer'}.md"
        parts.append(
            superior.read_prompt(
                prompt, name=sibling.agent_name, profile=sibling.config.profile, text=handed.text
            ).strip()
        )
        sibling.handed = None
    hint = next((h.hint for h in handovers if h.hint), "")
    return Handover("\n\n".join(parts), hint)


def deliver_restored(superior: Agent, handed: Handover) -> None:
    """Give `superior` its siblings' answers after a restore, as the live tool would have."""
    superior.add_tool_result(TOOL_NAME, handed.text, hint=handed.hint)
