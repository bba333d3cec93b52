"""Run events: what happens in a chat's run, told to whoever acts on it.

The runner and the loop announce a few typed events; the features that are
not the loop subscribe to them instead of being called from it: saving the
chat (store/chats.py), the web pusher (server/push.py), chat naming
(the shipped plugin plugins/chat_naming), memory recall and memorize and history compression
(core/run_features.py). The loop does not know who listens.

Each chat has its own `RunEvents` (`Chat.events`), used on the
agents' loop only. Subscribers are called in the order they subscribed:
plain functions at once, then the coroutines they returned (if any) one after
another. A subscriber that fails is logged and never costs the run, nor the
subscribers after it. See docs/architecture.md (run events).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from core.run_context import RunContext
    from core.tool import Response
    from models.llm import ModelReply

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunStarted:
    """A run was started (a message, a retry, a resumed chain); `ctx`'s agent works first."""

    ctx: RunContext


@dataclass(frozen=True)
class MonologueStarted:
    """An agent starts its loop on a task (Agent 0 on a message, a subordinate on its task)."""

    ctx: RunContext


#: How an iteration of the loop ended: its tool ran, its tool ended the loop, or it was
#: cut short (the user stepped in), rejected (a repairable problem) or stopped.
IterationOutcome = Literal["tool", "answer", "interrupted", "rejected", "stopped", "failed"]


@dataclass(frozen=True)
class MonologueEnded:
    """An agent's loop ended with its `answer`: Agent 0's to the user, a subordinate's to
    its superior (not when it was stopped or failed: `RunEnded` tells those)."""

    ctx: RunContext
    answer: str


@dataclass(frozen=True)
class IterationEnded:
    """One iteration of an agent's loop ended."""

    ctx: RunContext
    iteration: int
    outcome: IterationOutcome


@dataclass(frozen=True)
class StepProgressed:
    """A step that takes a while changed the chat as it ran (a slow tool, streamed output);
    told at a bounded pace (helpers/paced_save.py), so it may be saved before the step ends."""

    ctx: RunContext


@dataclass(frozen=True)
class ToolStarted:
    """A tool is about to run, called with `args` as the model wrote them (not masked)."""

    ctx: RunContext
    tool_name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class ModelCalled:
    """One model call of an agent ended: its `reply`, or the `error` that ended it (an
    intervention or a stop cut it short, the provider failed). Told only when someone
    listens (`RunEvents.wants`): the loop builds nothing for it otherwise."""

    ctx: RunContext
    #: Which of the agent's models: its chat model or its utility model.
    role: Literal["chat", "utility"]
    #: The model asked, as its setting names it ("openai/gpt-4.1-mini").
    model: str
    #: When the call began, in nanoseconds since the epoch (time.time_ns()).
    started: int
    messages: list[dict[str, Any]]
    reply: ModelReply | None = None
    error: BaseException | None = None


@dataclass(frozen=True)
class ModelCalling:
    """A model call of an agent is about to go out (told only while someone listens): its
    `messages`, which a subscriber may change in place (the call sends the change)."""

    ctx: RunContext
    role: str
    model: str
    messages: list[dict[str, Any]]


@dataclass(frozen=True)
class HistoryAdded:
    """An entry was added to an agent's history (told only while someone listens): `kind`
    (user, ai, tool, warning) and the message as the model will read it (masked)."""

    ctx: RunContext
    kind: str
    message: Any


@dataclass(frozen=True)
class ToolEnded:
    """A tool returned (`response.break_loop`: it ended its agent's loop)."""

    ctx: RunContext
    tool_name: str
    response: Response


@dataclass(frozen=True)
class RunEnded:
    """The run has unwound: `answer` when it ended with Agent 0's answer, else `error`
    (None with neither: it was stopped)."""

    answer: str | None = None
    error: BaseException | None = None


#: What changed outside an iteration: the run was paused or resumed, a message
#: reached the working agent as an intervention, or a tool call was held or answered.
Change = Literal["paused", "resumed", "intervention", "approval"]


@dataclass(frozen=True)
class StateChanged:
    """The chat's run state changed between iterations (see `Change`)."""

    change: Change
    #: The agent it concerns, where one does (an approval: the agent whose call is held).
    ctx: RunContext | None = None
    #: More on it: an approval's state ("pending", "allowed", "denied", "cancelled"), the
    #: names of the agents an intervention went to.
    detail: str = ""


@dataclass(frozen=True)
class ChatSaved:
    """The chat was written to disk."""

    chat_id: str


@dataclass(frozen=True)
class ChatClosed:
    """This process lets go of the chat (deleted, restored over, handed over or reset, or
    taken over by another node): work started for it (its naming) is to stop."""

    chat_id: str


RunEvent = (
    RunStarted
    | MonologueStarted
    | MonologueEnded
    | IterationEnded
    | StepProgressed
    | ToolStarted
    | ModelCalling
    | ModelCalled
    | HistoryAdded
    | ToolEnded
    | RunEnded
    | StateChanged
    | ChatSaved
    | ChatClosed
)
E = TypeVar("E", bound=RunEvent)
#: A subscriber: a plain function, or one returning a coroutine to await (in order).
Subscriber = Callable[[E], Awaitable[None] | None]


class RunEvents:
    """One chat's event feed: subscribe to an event type, emit events."""

    def __init__(self) -> None:
        self._subscribers: dict[type, list[Callable[[object], Awaitable[None] | None]]] = {}
        #: The subscribers put `first` (what an event announces is on disk through them).
        self._first: list[Callable[[object], Awaitable[None] | None]] = []
        #: Announcements not awaited by anyone (`emit_soon`), held until done.
        self._pending: set[asyncio.Future[None]] = set()

    def subscribe(
        self, kind: type[E], subscriber: Subscriber[E], *, first: bool = False
    ) -> Callable[[], None]:
        """Call `subscriber` with every event of type `kind`; returns the unsubscribe.

        `first`: before the subscribers already there (saving the chat: what an
        event announces is on disk before anything else acts on it).
        """
        subscribers = self._subscribers.setdefault(kind, [])
        subscribers.insert(0 if first else len(subscribers), subscriber)  # type: ignore[arg-type]
        if first:
            self._first.append(subscriber)  # type: ignore[arg-type]

        def unsubscribe() -> None:
            subscribers.remove(subscriber)  # type: ignore[arg-type]
            if first:
                self._first.remove(subscriber)  # type: ignore[arg-type]

        return unsubscribe

    def wants(self, kind: type[RunEvent]) -> bool:
        """Whether anyone listens to `kind`: an event that costs something to build (a
        model call's) is built only then."""
        return bool(self._subscribers.get(kind))

    def saves_first(self, kind: type[RunEvent]) -> bool:
        """Whether a subscriber put `first` (the chat's save) hears `kind`: the others'
        work on such an event begins once the save is done."""
        return any(s in self._first for s in self._subscribers.get(kind, ()))

    async def emit(self, event: RunEvent) -> None:
        """Tell every subscriber of the event's type and wait for their work."""
        await _run_in_order(self._call(event), event)

    def emit_soon(
        self, event: RunEvent, recorded: Callable[[], None] | None = None
    ) -> asyncio.Future[None] | None:
        """Tell the subscribers from code that cannot wait (call on the agents' loop).

        Plain subscribers run now; the coroutines they return run in a task,
        returned (None when there is none) so a caller may still wait for it.
        `recorded` is called once the subscribers put `first` are done (the chat's
        save), before the others' work (a run's memorizing, which takes a model call).
        """
        works = self._call(event)
        if not works:
            if recorded is not None:
                recorded()
            return None
        return self.spawn(_run_in_order(works, event, recorded))

    def spawn(self, work: Awaitable[None]) -> asyncio.Future[None]:
        """Run `work` that nobody awaits (a subscriber's long job), held until done."""
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    def _call(self, event: RunEvent) -> list[tuple[Awaitable[None], bool]]:
        """Each subscriber called; the work they return, each with whether it is a first
        subscriber's."""
        works = []
        for subscriber in list(self._subscribers.get(type(event), ())):
            try:
                result = subscriber(event)
            except Exception:  # one listener's bug must not cost the run or the others
                log.exception("a subscriber of %s failed", type(event).__name__)
                continue
            if inspect.isawaitable(result):
                works.append((result, subscriber in self._first))
        return works


async def _run_in_order(
    works: list[tuple[Awaitable[None], bool]],
    event: RunEvent,
    recorded: Callable[[], None] | None = None,
) -> None:
    """Await the subscribers' work one after another (a failure is logged, as in `_call`);
    `recorded` is called once the first subscribers' is done (or stopped)."""
    try:
        for at, (work, first) in enumerate(works):
            if not first and recorded is not None:
                recorded, told = None, recorded
                told()
            try:
                await work
            except Exception:
                log.exception("a subscriber of %s failed", type(event).__name__)
            except BaseException:  # stopped: the work not begun is dropped without a warning
                for left, _ in works[at + 1 :]:
                    if inspect.iscoroutine(left):
                        left.close()
                raise
    finally:
        if recorded is not None:
            recorded()
