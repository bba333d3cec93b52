"""Shared state between a test and the test tools it drops into a profile folder."""

from __future__ import annotations

import threading

#: Gates a test tool waits on, by name; the test sets them.
gates: dict[str, threading.Event] = {}
#: Calls recorded by test tools, in order.
calls: list[str] = []

GATED_TOOL = """
import asyncio

from core.tool import Response, Tool, ToolArgs
from tests.support import probe


class GateArgs(ToolArgs):
    gate: str


class Gated(Tool):
    Args = GateArgs

    async def execute(self, args):
        probe.calls.append("gated:" + args.gate)
        await asyncio.to_thread(probe.gates[args.gate].wait, 20)
        return Response(message="gate " + args.gate + " opened")
"""

RECORD_TOOL = """
from core.tool import Response, Tool
from tests.support import probe


class Record(Tool):
    async def execute(self, args):
        probe.calls.append("record")
        return Response(message="recorded")
"""


FINISH_TOOL = """
import asyncio

from core.tool import Response, Tool
from tests.support import probe


class Finish(Tool):
    async def execute(self, args):
        probe.calls.append("finish")
        await asyncio.to_thread(probe.gates["finish"].wait, 20)
        return Response(message="finished", break_loop=True)
"""


def reset() -> None:
    gates.clear()
    calls.clear()
