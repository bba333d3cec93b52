"""Code sessions in the bubblewrap sandbox against none: a session's start and a command.

Sessions are started and driven as code_execution_tool does (execution/code_sessions.py),
without a model: the figures are the sandbox's cost alone. The added time is the
difference of the medians. One more row: what a command printing without end (`yes`)
costs Cadre while no call waits for its output (its CPU per second of the flood).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time

from bench.harness import Row
from execution import sandbox_choice
from execution.code_sessions import CodeSessions
from execution.terminal_output import Timeouts
from helpers.files import usr_path
from helpers.settings import Settings

WAIT = Timeouts(10.0, 10.0, 10.0)
#: The flood's call: it stops waiting after a second, then the flood goes on unread.
FLOOD_WAIT = Timeouts(1.0, 1.0, 1.0)
#: Seconds the unread flood is measured.
FLOOD_SECONDS = 3.0
#: The command timed in each runtime: the one that does nothing; the rows name it.
NOTHING = {"terminal": "true", "python": "pass"}


async def measure(
    settings: Settings, runtime: str, starts: int, commands: int
) -> tuple[float, float]:
    """Median seconds of a session's start, and of one command doing nothing in it."""
    sessions = CodeSessions(usr_path("chats", "bench", "code"))
    code = NOTHING[runtime]
    started, ran = [], []
    try:
        for n in range(starts):
            began = time.perf_counter()
            await sessions.get(0, n, runtime, settings)  # type: ignore[arg-type]
            started.append(time.perf_counter() - began)
            sessions.reset(0, n)
        session, how, _ = await sessions.get(0, 0, runtime, settings)  # type: ignore[arg-type]
        for _ in range(commands):
            began = time.perf_counter()
            session.run_file(code, how.suffix, lambda path: how.command.format(path=path))
            got = await session.collect(WAIT)
            assert got.outcome == "done", got
            ran.append(time.perf_counter() - began)
    finally:
        sessions.close_all()
    return statistics.median(started), statistics.median(ran)


async def flood_cost(settings: Settings) -> float:
    """Cadre's CPU seconds per second while `yes` prints to a terminal nobody reads."""
    sessions = CodeSessions(usr_path("chats", "bench", "code"))
    try:
        session, how, _ = await sessions.get(0, 0, "terminal", settings)
        session.run_file("yes", how.suffix, lambda path: how.command.format(path=path))
        got = await session.collect(FLOOD_WAIT)
        assert got.outcome == "total_timeout", got
        before = os.times()
        await asyncio.sleep(FLOOD_SECONDS)
        after = os.times()
    finally:
        sessions.close_all()
    return (after.user + after.system - before.user - before.system) / FLOOD_SECONDS


def run(quick: bool) -> list[Row]:
    starts, commands = (5, 30) if quick else (15, 200)
    boxed = Settings(code_exec_sandbox="bubblewrap")
    choice = sandbox_choice.choose(boxed)
    if choice.broken:
        return [Row("sandbox: bubblewrap cannot run here", 0, "-", note=choice.broken)]
    rows = []
    for runtime, nothing in NOTHING.items():
        none = asyncio.run(measure(Settings(code_exec_sandbox="none"), runtime, starts, commands))
        bwrap = asyncio.run(measure(boxed, runtime, starts, commands))
        for what, index, unit, scale in (("session start", 0, "ms", 1000),
                                          (f"command ({nothing})", 1, "ms", 1000)):  # fmt: skip
            a, b = none[index] * scale, bwrap[index] * scale
            rows += [
                Row(f"{runtime} {what}, no sandbox", a, unit),
                Row(f"{runtime} {what}, bubblewrap", b, unit),
                Row(f"{runtime} {what}: added by bubblewrap", b - a, unit),
            ]
    cost = asyncio.run(flood_cost(boxed))
    rows.append(Row("Cadre's CPU while `yes` prints, unread", cost * 100, "% of a core"))
    return rows
