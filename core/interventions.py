"""The loop's check points: the user steps in, nudges, or pauses, and the agent notices.

A message sent while an agent works is set as its `intervention` (by the
runner); a nudge sets `nudged`. At each check point (before and during the
model call, before a tool runs) the agent waits while the run is paused, then
takes what is pending into its history and restarts its iteration
(`InterventionException`). A model call or tool in progress is abandoned when
the user steps in (`interruptible`), and what the model had written so far is
kept so it knows where it was cut off.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from helpers.errors import InterventionException

if TYPE_CHECKING:
    from core.agent import Agent


async def check_point(agent: Agent, partial_reply: str = "") -> None:
    """Wait while paused; restart the iteration if the user stepped in or nudged."""
    await agent.chat.runner.wait_while_paused()
    if agent.intervention is None and not agent.nudged:
        return
    agent.wake.clear()
    agent.nudge_wake.clear()
    if partial_reply:
        agent.add_reply(partial_reply)
    if agent.intervention is not None:
        msg, agent.intervention = agent.intervention, None
        agent.add_user_message(msg, intervention=True)
    if agent.nudged:
        agent.nudged = False
        agent.add_warning(agent.read_prompt("fw.msg_nudge.md"))
    raise InterventionException()


async def interruptible(
    agent: Agent, coro: Any, event: asyncio.Event, partial: Callable[[], str] = str
) -> Any:
    """Await `coro`, but abandon it when `event` is set (the user stepped in).

    `partial` tells what the model had written so far, which is kept in
    history so the model knows where it was interrupted.
    """
    task = asyncio.ensure_future(coro)
    waker = asyncio.ensure_future(event.wait())
    try:
        done, _ = await asyncio.wait({task, waker}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        # Stopped: the call unwinds before the run counts as ended, so whoever waits
        # for the run (a delete, a reset) never acts while a tool is still cleaning up.
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    finally:
        waker.cancel()
    if task in done:
        return task.result()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await check_point(agent, partial())
    # Woken with nothing pending (the check point consumed it first): the
    # call was abandoned all the same, so the iteration starts over.
    raise InterventionException()
