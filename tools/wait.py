"""The `wait` tool: pause for a while or until a time; a user's message ends the wait early."""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime

from pydantic import Field, model_validator

from core.tool import Response, Tool, ToolArgs
from helpers.errors import RepairableException


class WaitArgs(ToolArgs):
    seconds: float = Field(default=0, ge=0, le=31_536_000, allow_inf_nan=False)
    minutes: float = Field(default=0, ge=0, le=525_600, allow_inf_nan=False)
    hours: float = Field(default=0, ge=0, le=8_760, allow_inf_nan=False)
    until: str = Field(default="", description="An ISO time, e.g. 2026-12-01T09:00 (local).")

    @model_validator(mode="after")
    def _some_duration(self) -> WaitArgs:
        if not (self.seconds or self.minutes or self.hours or self.until):
            raise ValueError("give seconds, minutes, hours or until")
        return self


class Wait(Tool):
    """Sleeps on the agents' loop; an intervention (or nudge) wakes it."""

    Args = WaitArgs
    repeat_progress = "always"  # time passes: waiting again is waiting longer

    async def execute(self, args: WaitArgs) -> Response:
        total = args.seconds + args.minutes * 60 + args.hours * 3600
        if args.until:
            total += self._seconds_until(args.until)
        if total <= 0:
            return Response(self.ctx.read_prompt("fw.wait.done.md", waited="0 s"))
        ends = datetime.now().astimezone().timestamp() + total
        if self.log is not None:
            self.log.update(
                kvps={"until": datetime.fromtimestamp(ends).isoformat(timespec="seconds")}
            )
        began = time.monotonic()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.ctx.wake.wait(), timeout=total)
            waited = _duration(time.monotonic() - began)
            return Response(self.ctx.read_prompt("fw.wait.interrupted.md", waited=waited))
        return Response(self.ctx.read_prompt("fw.wait.done.md", waited=_duration(total)))

    def _seconds_until(self, raw: str) -> float:
        try:
            moment = datetime.fromisoformat(raw.strip())
        except ValueError:
            raise RepairableException(
                self.ctx.read_prompt("fw.wait.not_iso.md", raw=repr(raw))
            ) from None
        if moment.tzinfo is None:
            moment = moment.astimezone()  # a time without zone is local time
        return max(0.0, moment.timestamp() - time.time())


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
