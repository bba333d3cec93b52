"""A run's steps as progress lines: each told once its heading is final, in order, once."""

from __future__ import annotations

import asyncio
import threading

from core.log import Log
from server.apis.mcp_server.progress import RunProgress


async def next_lines(steps, count: int) -> list[str]:
    return [await asyncio.wait_for(anext(steps), 5) for _ in range(count)]


async def test_steps_are_told_once_final_and_the_rest_at_the_finish():
    log = Log()
    log.log("user", "User message", "earlier")  # before the watch: never told
    progress = RunProgress(log, asyncio.get_running_loop())
    steps = progress.steps()
    log.log("user", "User message", "go")
    thinking = log.log("agent", "A0: Generating...", agentno=0)
    thinking.stream(heading="")  # still streaming: the last item is held back
    # Changes come from the agents' thread, as in a run.
    worker = threading.Thread(target=lambda: (
        thinking.update(heading="A0: Delegating"),
        log.log("subagent", "A0: Calling subordinate agent"),
        log.log("agent", "A1: Generating...", agentno=1),
    ))  # fmt: skip
    worker.start()
    worker.join()
    assert await next_lines(steps, 2) == ["A0: Delegating", "A0: Calling subordinate agent"]
    log.items[-1].update(heading="A1: Searching")
    progress.finish()
    assert [line async for line in steps] == ["A1: Searching"]
    progress.close()
    log.log("tool", "A1: Using tool 'x'")
    assert log._subscribers == []


async def test_steps_logged_before_the_watch_began_are_told_from_start():
    log = Log()
    log.log("tool", "A0: before the message")
    log.log("user", "User message", "go")
    log.log("tool", "A0: the run's first step, logged before the watch")
    progress = RunProgress(log, asyncio.get_running_loop(), start=1)
    progress.finish()
    assert [line async for line in progress.steps()] == [
        "A0: the run's first step, logged before the watch"
    ]


async def test_a_reset_log_goes_on_from_its_new_items():
    log = Log()
    progress = RunProgress(log, asyncio.get_running_loop())
    steps = progress.steps()
    for n in range(3):
        log.log("tool", f"A0: step {n}")
    assert await next_lines(steps, 3) == ["A0: step 0", "A0: step 1", "A0: step 2"]
    log.reset()
    log.log("tool", "A0: after the cut")
    progress.finish()
    assert [line async for line in steps] == ["A0: after the cut"]
