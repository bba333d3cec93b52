"""What every model call shares, whichever client makes it: its config, reply and usage,
the live retry notice, and the litellm library (loaded lazily, priced from).

The clients themselves live beside this module: `models.model` is the seam (the `Model`
protocol and `for_config`), `models.client` the retries, bounds and reading both clients
share, `models.litellm_model` and `models.openai_model` the two transports.

litellm costs ~4 s and ~200 MB to import and, without
`LITELLM_LOCAL_MODEL_COST_MAP=True`, fetches its price map from the network
first. It is therefore imported on first use (or by `preload()` in a
background thread at start-up), never at module import time. The lean client
needs it too, but only for its price map (`priced`) and model facts
(`core.reply.reply_schema`), never per chunk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from models import model_facts, tokens
from models.local_model import LocalSpec, is_local
from models.provider_faults import ProviderFault, move_reason, retry_reason

#: Which client makes a model's calls (the `model_client` setting): "auto" is the lean
#: OpenAI-SDK client where the provider speaks OpenAI's API, litellm elsewhere.
ClientChoice = Literal["auto", "litellm", "openai"]

_import_lock = threading.Lock()
_litellm: ModuleType | None = None


def litellm_module() -> ModuleType:
    """Import litellm once, offline-safe and quiet."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            # litellm's own types trip a pydantic notice on every process; not ours to fix.
            warnings.filterwarnings(
                "ignore", message=r".*`ReadOnly` qualifier", category=UserWarning
            )
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            litellm.drop_params = True  # a provider that lacks a parameter ignores it
            _litellm = litellm
        return _litellm


_sdk_lock = threading.Lock()
#: The SDK once its import has ended (never `sys.modules`' entry, which is there, half
#: made, while another thread imports it: start-up's litellm imports it too).
_openai: ModuleType | None = None


def openai_module() -> ModuleType:
    """The `openai` SDK, imported once (about a second: never at Cadre's import time); an
    import another thread has begun is waited for by the import system itself."""
    global _openai
    with _sdk_lock:
        import openai

        # httpx too, whole, now: the SDK looks for it in sys.modules when a client is made,
        # and litellm's import (start-up's next, seconds long) puts it there half made
        # meanwhile ("partially initialized module 'httpx' has no attribute 'Timeout'"
        # failed a first message once).
        with contextlib.suppress(ImportError):
            import httpx  # noqa: F401

        _openai = openai
        return openai


async def openai_loaded() -> ModuleType:
    """The SDK, for code on the agents' loop: a first import runs in a thread."""
    return _openai if _openai is not None else await asyncio.to_thread(openai_module)


def litellm_imported() -> bool:
    """Whether litellm's import has ended (its own answers may be asked without waiting)."""
    return _litellm is not None


async def litellm_loaded() -> ModuleType:
    """litellm, for code on the agents' loop: an import still going on (seconds, at start)
    is waited for in a thread, so the other chats on the loop go on meanwhile."""
    return _litellm if _litellm is not None else await asyncio.to_thread(litellm_module)


#: Set once start-up's imports are done (`preload`): `/health` says `ready`.
_preloaded = threading.Event()
#: Set once the SDK (and httpx with it) is imported, or could not be.
_sdk_imported = threading.Event()


def wait_for_sdk(timeout: float) -> None:
    """Block until start-up's thread has imported the openai SDK (and httpx with it). Other
    start-up threads that import httpx (the MCP SDK) wait for it: two threads importing one
    module at once can hand one of them a half-made module ('partially initialized module
    httpx'), which failed a first message right after start."""
    _sdk_imported.wait(timeout)


def preloaded() -> bool:
    """Whether start-up's imports (the SDK, litellm) are done: until then a first call
    waits for the SDK's alone, and every call shares the interpreter with litellm's."""
    return _preloaded.is_set()


def _preload() -> None:
    # In the order a first call needs them: prices and model facts (45 ms), the openai SDK
    # the lean client calls with (through its one importer, which a first call waits on
    # whole: two threads importing it, or litellm importing it meanwhile, gave one a
    # half-made module: 'openai' or 'httpx' with no attribute ...), then litellm (seconds).
    # While litellm imports, calls share the interpreter with it: a step costs several
    # times more (bench steps waits for `preloaded`).
    try:
        model_facts.preload()
        try:
            openai_module()
        finally:
            _sdk_imported.set()
        litellm_module()
    finally:
        _preloaded.set()  # or it failed: a call then says why, nothing waits for ever
    tokens.preload()


def preload() -> threading.Thread:
    """Read the model facts, import the openai SDK and litellm and load the tokenizer in a
    background thread, off the start-up path."""
    thread = threading.Thread(target=_preload, name="litellm-preload", daemon=True)
    thread.start()
    return thread


@dataclass(frozen=True)
class ModelConfig:
    """One model as settings describe it."""

    model: str
    api_base: str = ""
    api_key: str = ""
    ctx_length: int = 128_000
    kwargs: dict[str, Any] = field(default_factory=dict)
    retries: int = 3
    retry_delay: float = 1.0
    #: Seconds the whole call may take, retries and streaming included (llm_timeout).
    timeout: float = 600.0
    #: Seconds each try waits for its first chunk (llm_first_chunk_timeout); retried.
    first_chunk_timeout: float = 120.0
    #: Seconds of silence between two chunks once the stream began; not retried.
    between_chunks_timeout: float = 60.0
    #: Most characters of reply and reasoning before the call is ended (ReplyTooLong).
    max_reply_chars: int = 200_000
    #: For a `local/<name>` model: the file to run in-process (see local_model).
    local: LocalSpec | None = None
    #: Which client makes the calls (see `models.model.for_config`).
    client: ClientChoice = "auto"
    #: Models tried in order when this one fails in a way retrying will not fix
    #: (models/fallback.py); each built with the same limits, with no fallbacks of its own.
    fallbacks: tuple[ModelConfig, ...] = ()
    #: Seconds a model that failed so is passed over for its fallbacks (fallback_cooldown).
    cooldown: float = 300.0
    #: How much its provider may be asked, shared by every call (models/rate_limits.py).
    limit: ProviderRate | None = None


@dataclass(frozen=True)
class ProviderRate:
    """A provider's limit (the `provider_limits` setting) as a call meets it."""

    #: The provider prefix it is counted under ("openai").
    provider: str
    #: Requests per window (0: no limit).
    requests: int = 0
    #: Tokens per window (0: no limit).
    tokens: int = 0
    #: Seconds the counts are over.
    window: float = 60.0


@dataclass
class Usage:
    """Tokens and money spent, summed over calls.

    `cost` is in US dollars from litellm's price map; `uncosted_calls`
    counts calls to models the map does not know (their tokens still count).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cost: float = 0.0
    uncosted_calls: int = 0
    #: The model one call's usage is of (set where it is priced); "" for a sum.
    model: str = ""
    #: A sum's counts by the model that really answered: a call that moved to a fallback
    #: (models/fallback.py) is counted for the model that made the reply.
    models: dict[str, Usage] = field(default_factory=dict)

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.calls += other.calls
        self.cost += other.cost
        self.uncosted_calls += other.uncosted_calls
        parts = other.models.items() if other.models else [(other.model, other)]
        for name, part in parts:
            if name:
                mine = self.models.setdefault(name, Usage())
                mine.prompt_tokens += part.prompt_tokens
                mine.completion_tokens += part.completion_tokens
                mine.calls += part.calls
                mine.cost += part.cost
                mine.uncosted_calls += part.uncosted_calls

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "calls": self.calls,
            "cost": round(self.cost, 8),
            "uncosted_calls": self.uncosted_calls,
        }
        if self.models:
            found["models"] = {name: part.to_dict() for name, part in self.models.items()}
        return found

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        keys = ("prompt_tokens", "completion_tokens", "calls", "uncosted_calls")
        counts = {key: int(data.get(key, 0)) for key in keys}
        models = data.get("models")
        models = models if isinstance(models, dict) else {}
        parts = {str(name): cls.from_dict(p) for name, p in models.items() if isinstance(p, dict)}
        return cls(**counts, cost=float(data.get("cost", 0.0)), models=parts)


@dataclass
class ModelReply:
    """What one call produced."""

    text: str
    reasoning: str
    usage: Usage
    #: True when `on_chunk` stopped the stream before the provider finished.
    stopped_early: bool = False
    #: Why the provider ended the reply ("stop", "length", ...), "" where it did not say.
    finish_reason: str = ""


#: Called with (new reply text, new reasoning) of each chunk that brought some;
#: returns True to stop reading.
ChunkHandler = Callable[[str, str], Awaitable[bool]]
#: Told the token usage of each call that produced output.
UsageHandler = Callable[["Usage"], None]


@dataclass(frozen=True)
class RetryNotice:
    """A try failed and another follows after `delay` seconds (for a live "retrying" line)."""

    #: The number of the try that comes next (2 for the first retry).
    attempt: int
    #: How many tries the call may make in all.
    of: int
    delay: float
    fault: ProviderFault

    @property
    def text(self) -> str:
        """The live line, e.g. 'The provider failed (HTTP 500); retrying in 4 s, attempt 2 of 4'."""
        delay = self.delay
        seconds = f"{delay:.0f}" if delay >= 10 or delay == int(delay) else f"{delay:.1f}"
        return (
            f"{retry_reason(self.fault)}; retrying in {seconds} s, "
            f"attempt {self.attempt} of {self.of}"
        )


@dataclass(frozen=True)
class MoveNotice:
    """A model failed in a way retrying will not fix and the call moves to a fallback
    (models/fallback.py); told again once the fallback answered."""

    #: The model that failed, and the one tried (or that answered) instead.
    failed: str
    instead: str
    fault: ProviderFault
    answered: bool = False

    @property
    def text(self) -> str:
        """E.g. 'openai/gpt-4.1 refused: no credit or quota left; anthropic/claude answered'."""
        then = f"{self.instead} answered" if self.answered else f"trying {self.instead}"
        return f"{self.failed} {move_reason(self.fault)}; {then}"


@dataclass(frozen=True)
class LimitWait:
    """A call waits for its provider's limit (the `provider_limits` setting)."""

    provider: str
    #: Seconds left to wait.
    delay: float
    #: What ran out: "requests" or "tokens".
    what: str
    #: How many of them the provider allows per window, and the window in seconds.
    allowed: int
    window: float

    @property
    def text(self) -> str:
        """E.g. 'Waiting 12 s for openai's limit of 3 requests a minute'."""
        per = "a minute" if self.window == 60 else f"per {self.window:g} s"
        what = self.what.removesuffix("s") if self.allowed == 1 else self.what
        return (
            f"Waiting {max(1, round(self.delay))} s for {self.provider}'s limit of "
            f"{self.allowed:,} {what} {per}"
        )


#: What a call tells its caller while it goes on: a retry's wait, a move to a fallback
#: model, a wait for the provider's limit. Each says itself in `text`.
CallNotice = RetryNotice | MoveNotice | LimitWait
#: Told of each retry before its wait (and of moves and limit waits, see `CallNotice`).
RetryHandler = Callable[[CallNotice], None]


def priced(model: str, usage: Usage) -> Usage:
    """`usage` with its cost from litellm's price map (or counted as uncosted)."""
    # A local model is never in the map: no need to import litellm (seconds) to know it.
    # Nor is a model litellm could not price before (a local server's, most often): the
    # map is only read at start, and asking it again costs about a millisecond a call.
    if is_local(model) or model in _unpriced:
        usage.cost, usage.uncosted_calls = 0.0, usage.calls
        usage.model = model
        return usage
    usage.model = model
    if _litellm is None and model_facts.known():
        # litellm still importing (seconds, at start): its map, read without it.
        found = model_facts.cost(model, usage.prompt_tokens, usage.completion_tokens)
        if found is None:
            usage.cost, usage.uncosted_calls = 0.0, usage.calls
        else:
            usage.cost = found
        return usage
    try:
        prompt, completion = litellm_module().cost_per_token(
            model=model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
        )
        usage.cost = float(prompt) + float(completion)
    except Exception:  # noqa: BLE001 - litellm raises several kinds for "not in the map"
        if len(_unpriced) < UNPRICED_KEPT:
            _unpriced.add(model)
        usage.cost, usage.uncosted_calls = 0.0, usage.calls
    return usage


#: Models litellm's price map lacks, remembered (a model name comes from settings: bounded).
UNPRICED_KEPT = 64
_unpriced: set[str] = set()
