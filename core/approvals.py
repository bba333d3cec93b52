"""Actions waiting for the user's yes or no (a command to run, when confirmation is on).

A tool asks with `request(item_id)` and awaits the answer; the page or the
API answers with `decide(item_id, approved)`. Both run on the agents' event
loop. A run stopped while waiting cancels the wait; nothing is left pending.
"""

from __future__ import annotations

import asyncio


class Approvals:
    """One chat's pending approvals, keyed by the id of the log item that shows them."""

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[bool]] = {}

    async def request(self, item_id: str) -> bool:
        """Wait for the user's answer about `item_id`: True to go ahead."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending[item_id] = future
        try:
            return await future
        finally:
            self._pending.pop(item_id, None)

    def decide(self, item_id: str, approved: bool) -> bool:
        """Answer a pending request; False when nothing waits under that id."""
        future = self._pending.get(item_id)
        if future is None or future.done():
            return False
        future.set_result(approved)
        return True

    def pending(self) -> list[str]:
        return list(self._pending)
