"""Per-provider limits: requests and tokens a minute, shared by every call of this process.

The `provider_limits` setting names a provider by the prefix of its models' names
(`openai`, `anthropic`, `openrouter`; the longest that fits a model's name applies) with
its requests (`rpm`) and tokens (`tpm`) per window (a minute unless `window` says
otherwise). Each try of a model call takes its turn here first (models/client.py): one
under the limit goes at once; one over it waits until the oldest calls of the window
have aged out, and is never refused. Waiting tries go in the order they came: a later
one that would fit waits behind them, so a big prompt is not kept out for ever by a
stream of small ones. The caller hears of the wait (`LimitWait`, through
the call's `on_retry`: the step's row says how long), again every few seconds while it
lasts.

A try counts its prompt's estimated tokens when it starts, and the tokens it really
used (prompt and reply) once it ends. The counts are this process's, kept under one
lock: calls run on several threads and event loops. In cluster mode each node counts
its own calls (docs/scaling.md): a provider's limit is then a limit per node.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from models.llm import LimitWait, ModelConfig, ProviderRate, RetryHandler

log = logging.getLogger(__name__)

#: Seconds between two notices of one long wait (the row's time left stays current).
NOTICE_EVERY = 5.0
#: Seconds a try in line waits before it looks again when the one ahead could go now.
AFTER_AHEAD = 0.05
#: Seconds after which a try in line that stopped looking (a waiting try looks every
#: `NOTICE_EVERY` at the most) is taken for gone and loses its place.
GONE_AFTER = 60.0


def provider_rate(model: str, limits: Mapping[str, Any]) -> ProviderRate | None:
    """The limit of `model`'s provider in `limits` (the setting: prefix -> `rpm`, `tpm`,
    `window`), by the longest prefix of the model's name it names; None without one."""
    found: tuple[str, Any] | None = None
    for key, limit in limits.items():
        prefix = key.strip().strip("/")
        fits = prefix and (model == prefix or model.startswith(prefix + "/"))
        if fits and (found is None or len(prefix) > len(found[0])):
            found = (prefix, limit)
    if found is None:
        return None
    prefix, limit = found
    read = (
        limit.get
        if isinstance(limit, Mapping)
        else lambda name, default: getattr(limit, name, default)
    )
    requests, tokens = int(read("rpm", 0) or 0), int(read("tpm", 0) or 0)
    if not (requests or tokens):
        return None
    return ProviderRate(prefix, requests, tokens, float(read("window", 60.0) or 60.0))


class Turn:
    """One try's place in its provider's window: what it counts, set right once known."""

    def __init__(self, entry: list[float], lock: threading.Lock) -> None:
        self._entry = entry
        self._lock = lock

    def spent(self, tokens: int) -> None:
        """The tokens the try really used (its estimate until now)."""
        with self._lock:
            self._entry[1] = float(tokens)


class RateLimits:
    """The windows of every limited provider: when each recent try began, with its tokens;
    and the tries waiting for a turn, first come first served (a later, smaller try that
    would fit must not keep the window full for ever while a bigger one waits)."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        looks: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        #: When a waiting try last looked (apart from `clock`, whose windows a test moves).
        self._looks = looks
        self._windows: dict[str, deque[list[float]]] = {}
        #: provider -> the waiting tries, in the order they came.
        self._queues: dict[str, deque[_Place]] = {}
        self._tickets = itertools.count(1)

    def try_take(
        self, rate: ProviderRate, tokens: int, ticket: int = 0
    ) -> tuple[Turn | None, float, str]:
        """A turn now, or none with the seconds to wait and what ran out. A try that waits
        already holds its `ticket` (0: none yet): only the first in line may take a turn."""
        with self._lock:
            now = self._clock()
            entries = self._windows.setdefault(rate.provider, deque())
            while entries and entries[0][0] <= now - rate.window:
                entries.popleft()
            wait, what = _wait(entries, rate, tokens, now)
            queue = self._queues.get(rate.provider)
            if queue:
                self._gone_dropped(rate.provider, queue, ticket)
            if queue and queue[0].ticket != ticket:  # another waits ahead: after it
                ahead, what_ahead = _wait(entries, rate, queue[0].tokens, now)
                what = (what_ahead if ahead >= wait else what) or what_ahead or what
                # The one ahead may take its turn at its next look: look again after it.
                return None, max(wait, ahead, AFTER_AHEAD), what or _first_limit(rate)
            if wait > 0:
                return None, wait, what
            if queue:
                queue.popleft()  # its turn: the next in line is first now
            entry = [now, float(tokens)]
            entries.append(entry)
            return Turn(entry, self._lock), 0.0, ""

    async def take(self, rate: ProviderRate, tokens: int, on_wait: RetryHandler | None) -> Turn:
        """A turn for a try of `tokens` (estimated), waited for in line as long as it takes
        (a Stop cancels the wait, and the try leaves the line)."""
        ticket = 0
        try:
            while True:
                turn, wait, what = self.try_take(rate, tokens, ticket)
                if turn is not None:
                    if ticket:
                        log.info("provider %s: the wait for its limit is over", rate.provider)
                    return turn
                allowed = rate.requests if what == "requests" else rate.tokens
                notice = LimitWait(rate.provider, wait, what, allowed, rate.window)
                if not ticket:
                    log.info("provider %s: %s", rate.provider, notice.text)
                    ticket = self._join(rate.provider, tokens)
                if on_wait is not None:
                    on_wait(notice)
                await asyncio.sleep(min(wait, NOTICE_EVERY))
        finally:
            if ticket:
                self._leave(rate.provider, ticket)

    def _join(self, provider: str, tokens: int) -> int:
        with self._lock:
            ticket = next(self._tickets)
            place = _Place(ticket, tokens, self._looks())
            self._queues.setdefault(provider, deque()).append(place)
            return ticket

    def _leave(self, provider: str, ticket: int) -> None:
        """Out of the line (a try that got its turn has left it already)."""
        with self._lock:
            queue = self._queues.get(provider, deque())
            for place in queue:
                if place.ticket == ticket:
                    queue.remove(place)
                    break

    def _gone_dropped(self, provider: str, queue: deque[_Place], ticket: int) -> None:
        """`ticket`'s look noted; a try ahead that stopped looking long ago (its event loop
        gone without ending it) dropped, or it would hold its provider's line for ever."""
        now = self._looks()
        for place in queue:
            if place.ticket == ticket:
                place.seen = now
        while queue and queue[0].ticket != ticket and now - queue[0].seen > GONE_AFTER:
            log.warning("provider %s: a call waiting for its limit stopped looking %.0f s "
                        "ago; its place in line is given up", provider,
                        now - queue[0].seen)  # fmt: skip
            queue.popleft()


@dataclass
class _Place:
    """A try waiting in its provider's line: its ticket, its tokens, when it last looked."""

    ticket: int
    tokens: int
    seen: float


def _first_limit(rate: ProviderRate) -> str:
    return "requests" if rate.requests else "tokens"


def _wait(
    entries: deque[list[float]], rate: ProviderRate, tokens: int, now: float
) -> tuple[float, str]:
    """Seconds until a try of `tokens` fits the window `entries`, and what ran out."""
    wait, what = 0.0, ""
    if rate.requests and len(entries) >= rate.requests:
        # The try that must age out for one more to fit.
        oldest = entries[len(entries) - rate.requests][0]
        wait, what = oldest + rate.window - now, "requests"
    if rate.tokens and entries:
        over = sum(entry[1] for entry in entries) + tokens - rate.tokens
        if over > 0:
            until = entries[-1][0]  # all of them, for a prompt bigger than the limit
            for when, used in entries:
                over -= used
                if over <= 0:
                    until = when
                    break
            if until + rate.window - now > wait:
                wait, what = until + rate.window - now, "tokens"
    return max(wait, 0.0), what


#: The process's limits: every chat's calls share them.
LIMITS = RateLimits()


async def take_turn(config: ModelConfig, tokens: int, on_wait: RetryHandler | None) -> Turn | None:
    """A turn for a try of `config`'s model (None when its provider has no limit)."""
    if config.limit is None:
        return None
    return await LIMITS.take(config.limit, tokens, on_wait)
