"""Fallback models: a call that fails in a way retrying the same model will not fix moves
to the next model of its role's list (`chat_fallbacks`, `util_fallbacks`,
`embed_fallbacks`).

`FallbackModel` is what the model seam (models/model.py `for_config`) hands out for a
model with fallbacks: it implements the `Model` protocol by trying the model itself,
then each fallback in order, each through its own client with its own retries. It moves
on only for a fault another try of the same model will not cure (`MOVES`): no credit or
quota, a refused key, a model the provider does not know, a conversation too long for
the model, a rate limit that outlasted the retries, a provider down or failing through
every retry. A reply the model can repair (malformed JSON: core/reply) is no failure
here, and never moves; nor does a call whose output the caller has already been given
(the same rule as retries: the person would see a second answer begin).

A model that failed so (but for a conversation too long for it: that is the request's
fault, `OF_THE_REQUEST`) is passed over for `ModelConfig.cooldown` seconds (the
`fallback_cooldown` setting): `COOLING`, shared by every chat, thread and event loop of
the process, puts it after its fallbacks until then, and it is tried first again after.
Embeddings are the exception: their model is always tried first and never passed over,
since a fallback's vectors are of another space that memory does not mix in.
The caller hears of each move (`MoveNotice`, through `on_retry`: the step's row says it),
and the server log says which model failed, why, and which one answered. Usage is
priced by the client of the model that answered, so each model's tokens and cost are
its own (`Usage.models`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from helpers.errors import ProviderError, UserError
from models.llm import (
    ChunkHandler,
    ModelConfig,
    ModelReply,
    MoveNotice,
    RetryHandler,
    UsageHandler,
)

if TYPE_CHECKING:
    from models.model import Model
    from models.provider_faults import ProviderFault

log = logging.getLogger(__name__)

#: The faults that move a call to the next model (see the module's docstring). A reply
#: cut for its length (`ReplyTooLong`, no fault) is the caller's to handle.
MOVES = frozenset(
    {"prefix", "unreachable", "key", "quota", "model", "context", "rate", "server", "timeout"}
)

#: Of those, the faults of one request, not of the model: a conversation too long for it
#: moves this call, but the model stays first for every other (shorter ones, other chats).
OF_THE_REQUEST = frozenset({"context"})


def moves(exc: ProviderError) -> bool:
    """Whether `exc` is a failure the next model may not have."""
    return exc.fault is not None and exc.fault.kind in MOVES


@dataclass(frozen=True)
class Cooling:
    """A model passed over until `until` (time.monotonic), and why."""

    model: str
    until: float
    reason: str


class CoolDowns:
    """The models that failed for good lately, each until its cool-down ends; one lock,
    since calls run on several threads and event loops."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._cooling: dict[tuple[str, str, str], Cooling] = {}

    def failed(self, config: ModelConfig, reason: str) -> None:
        if config.cooldown <= 0:
            return
        until = self._clock() + config.cooldown
        with self._lock:
            self._cooling[_key(config)] = Cooling(config.model, until, reason)

    def answered(self, config: ModelConfig) -> None:
        with self._lock:
            self._cooling.pop(_key(config), None)

    def cooling(self, config: ModelConfig) -> Cooling | None:
        """Why `config`'s model is passed over now; None when it is not."""
        key = _key(config)
        with self._lock:
            found = self._cooling.get(key)
            if found is not None and found.until <= self._clock():
                del self._cooling[key]  # its cool-down is over: tried first again
                found = None
            return found

    def clear(self) -> None:
        with self._lock:
            self._cooling.clear()


def _key(config: ModelConfig) -> tuple[str, str, str]:
    # The key's digest, not the key: two people's keys for one model fail apart.
    key = hashlib.sha256(config.api_key.encode()).hexdigest()[:12] if config.api_key else ""
    return config.model, config.api_base, key


#: Every model of the process that failed for good lately (see `CoolDowns`).
COOLING = CoolDowns()


def _chain(config: ModelConfig) -> list[ModelConfig]:
    """The model (without its fallbacks) and its fallbacks, as listed."""
    return [dataclasses.replace(config, fallbacks=()), *config.fallbacks]


def in_order(config: ModelConfig) -> list[ModelConfig]:
    """The model and its fallbacks in the order a call tries them: those cooling down
    after the others (still tried if every other fails)."""
    chain = _chain(config)
    ready = [one for one in chain if COOLING.cooling(one) is None]
    return ready + [one for one in chain if one not in ready]


@dataclass(frozen=True)
class InUse:
    """A role's model passed over for a fallback (the chat's header and status line)."""

    model: str
    instead: str
    reason: str
    #: Seconds until the model is tried first again.
    left: float

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "instead": self.instead, "reason": self.reason,
                "left": round(self.left)}  # fmt: skip


def in_use(config: ModelConfig) -> InUse | None:
    """Which fallback a call of `config` tries first now, when its own model cools down."""
    if not config.fallbacks:
        return None
    cooling = COOLING.cooling(config)
    if cooling is None:
        return None
    first = in_order(config)[0]
    if _key(first) == _key(config):
        return None  # its fallbacks cool down too: the model itself is tried first again
    left = max(0.0, cooling.until - time.monotonic())
    return InUse(config.model, first.model, cooling.reason, left)


class FallbackModel:
    """A model with fallbacks, behind the `Model` protocol (see the module's docstring)."""

    def __init__(self, config: ModelConfig, client_for: Callable[[ModelConfig], Model]) -> None:
        self.config = config
        self._client_for = client_for
        self._primary = client_for(dataclasses.replace(config, fallbacks=()))
        self.name = self._primary.name
        #: The model whose reply the last call returned (an embedding's vectors belong to it).
        self.answered_by = config.model

    async def stream(
        self,
        messages: list[dict[str, Any]],
        on_chunk: ChunkHandler | None = None,
        on_usage: UsageHandler | None = None,
        schema: dict[str, Any] | None = None,
        on_retry: RetryHandler | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """A streamed reply from the first model that gives one (see the module doc)."""
        shown = False
        moved: MoveNotice | None = None

        async def relay(text: str, reasoning: str) -> bool:
            nonlocal shown, moved
            if not shown and moved is not None and on_retry is not None:
                on_retry(dataclasses.replace(moved, answered=True))  # before its first words
            shown = True
            return await on_chunk(text, reasoning) if on_chunk is not None else False

        async def call(model: Model) -> ModelReply:
            return await model.stream(
                messages, relay if on_chunk is not None else None, on_usage, schema, on_retry,
                max_tokens,
            )  # fmt: skip

        def told(notice: MoveNotice) -> None:
            nonlocal moved
            moved = notice
            if on_retry is not None:
                on_retry(notice)

        return await self._first_that_answers(call, lambda: shown, told)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        on_usage: UsageHandler | None = None,
        schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """A whole reply without live callbacks (utility work)."""
        return await self.stream(messages, None, on_usage, schema, max_tokens=max_tokens)

    async def embed(
        self, texts: list[str], on_usage: UsageHandler | None = None
    ) -> list[list[float]]:
        """One vector per text, from the first model that gives them (`answered_by` says
        which: vectors of two models are not to be mixed)."""

        async def call(model: Model) -> list[list[float]]:
            return await model.embed(texts, on_usage)

        # The model itself first, always, and never passed over: a fallback's vectors are
        # of another space, which memory refuses (memory/memories.py), so only the model's
        # own are of use once it answers again.
        return await self._first_that_answers(call, lambda: False, lambda notice: None, cools=False)

    def count_tokens(self, text: str) -> int:
        return self._primary.count_tokens(text)

    async def _first_that_answers(
        self,
        call: Callable[[Model], Any],
        shown: Callable[[], bool],
        told: Callable[[MoveNotice], None],
        cools: bool = True,
    ) -> Any:
        """`call` on each model in turn until one answers; the failures that may not move
        (or the last one) are raised. `cools`: the order and the failures count for the
        cool-downs (`COOLING`); else the model is tried first, as listed."""
        failures: list[tuple[ModelConfig, ProviderError]] = []
        unusable: list[UserError] = []
        chain = in_order(self.config) if cools else _chain(self.config)
        for place, config in enumerate(chain):
            try:
                result = await call(self._client_for(config))
            except UserError as exc:  # a fallback its client cannot call: said, skipped
                log.warning("fallback model %s cannot be called (%s); skipped", config.model, exc)
                unusable.append(exc)
                continue
            except ProviderError as exc:
                if not moves(exc) or shown():
                    raise
                assert exc.fault is not None
                if cools and exc.fault.kind not in OF_THE_REQUEST:
                    COOLING.failed(config, exc.fault.headline)
                failures.append((config, exc))
                if place + 1 < len(chain):
                    notice = MoveNotice(config.model, chain[place + 1].model, exc.fault)
                    log.warning("model call: %s (%s)", notice.text, exc)
                    told(notice)
                continue
            if cools:
                COOLING.answered(config)
            self.answered_by = config.model
            if failures:
                first, error = failures[-1]
                notice = MoveNotice(first.model, config.model, _fault(error), answered=True)
                log.warning("model call: %s", notice.text)
            return result
        if not failures:
            raise unusable[0]
        raise _all_failed(failures)


def _fault(error: ProviderError) -> ProviderFault:
    assert error.fault is not None
    return error.fault


def _all_failed(failures: list[tuple[ModelConfig, ProviderError]]) -> ProviderError:
    """The first model's failure, its headline saying the fallbacks failed too."""
    first_config, first = failures[0]
    others = "; ".join(f"{c.model}: {_fault(e).headline}" for c, e in failures[1:])
    fault = _fault(first)
    if others:
        fault = dataclasses.replace(
            fault, headline=f"{fault.headline} The fallback models failed too ({others})."
        )
    log.warning("model call: %s and every fallback failed (%s)", first_config.model, others)
    error = ProviderError(f"{first}; fallbacks: {others}" if others else str(first), fault)
    error.__cause__ = first
    return error
