"""Which node of a cluster polls Telegram: one at a time, or Telegram answers the second
poller with a conflict (409) and updates could go to either.

Time is cut in turns of `TURN` seconds; a node polls in a turn it claimed (cluster/claims.py:
`SET NX`, the first asker gets it). The node polling now claims the next turn a third of a
turn before it begins, so it stays the poller while it lives; the others ask at each turn's
start and get it only when that node is gone (then within a turn). The node that got a
message runs its chat and sends the answer, whoever polls by then. A process alone (no
cluster) always polls. When Redis does not answer, nobody polls until it does (said once in
the log).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from helpers.errors import Unavailable

if TYPE_CHECKING:
    from cluster.node import Node

log = logging.getLogger(__name__)

#: Seconds of one turn.
TURN = 30.0


class Turns:
    """This node's turns at polling."""

    def __init__(self, node: Node | None = None, turn: float = TURN) -> None:
        self.node = node if node is not None and node.clustered else None
        self.turn = turn
        #: How long before its turn's end the poller claims the next one.
        self.early = turn / 3
        self._held: set[int] = set()
        self._unavailable = False

    def mine(self) -> bool:
        """May this node poll now? (Blocking: it may ask Redis.)"""
        if self.node is None:
            return True
        now = time.time()
        turn = int(now // self.turn)
        self._held = {held for held in self._held if held >= turn}
        if turn not in self._held and not self._claim(turn):
            return False
        if (turn + 1) * self.turn - now <= self.early and turn + 1 not in self._held:
            self._claim(turn + 1)
        return True

    def poll_seconds(self, longest: float) -> float:
        """How long the next long poll may wait: no longer than this node's turns last."""
        if self.node is None:
            return longest
        now = time.time()
        turn = int(now // self.turn)
        end = (turn + 2 if turn + 1 in self._held else turn + 1) * self.turn
        return max(0.0, min(longest, end - now - 1))

    def wait(self) -> float:
        """Seconds until the next turn begins (when this node may ask again)."""
        return self.turn - time.time() % self.turn + 0.05

    def _claim(self, turn: int) -> bool:
        assert self.node is not None
        try:
            got = self.node.claim(f"telegram:poll:{turn}", 2 * self.turn)
        except Unavailable as exc:
            if not self._unavailable:
                log.warning("telegram: no node polls Telegram until the cluster answers: %s", exc)
                self._unavailable = True
            return False
        if self._unavailable:
            log.info("telegram: the cluster answers again; polling Telegram resumes")
            self._unavailable = False
        if got:
            self._held.add(turn)
        return got
