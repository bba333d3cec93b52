"""A chat's traces: the run being traced gets the chat's step events, for its length.

Made at a chat's first traced run (core/tracing/__init__.py). While a run is traced it
subscribes to the step events and hands them to that run's `RunTrace`; when no run is
traced any more it unsubscribes, so an untraced run costs nothing per step.

A message that arrives as a run ends starts the next run before the first one's
`RunEnded` is told (core/runner.py `_after_run`): the first trace is then set aside as
ending, and the `RunEnded` that comes while the next run already runs is its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.events import (
    IterationEnded,
    ModelCalled,
    MonologueStarted,
    RunEnded,
    RunStarted,
    StateChanged,
    ToolEnded,
    ToolStarted,
)
from core.tracing import exporting
from core.tracing.run_trace import RunTrace

if TYPE_CHECKING:
    from core.chat import Chat


class ChatTraces:
    """The traced runs of one chat (on the agents' loop, as its events are)."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        #: The trace of the run now running, if it is traced.
        self.current: RunTrace | None = None
        #: A trace whose run ended as the next began, waiting for its `RunEnded`.
        self.ending: RunTrace | None = None
        self._unsubscribe: list[Callable[[], None]] = []

    def run_started(self, event: RunStarted, traced: bool) -> None:
        """A run starts: traced or not, the one before it (if still open) is ending."""
        if self.current is not None:
            if self.ending is not None:  # never told its end: closed as it is
                self.ending.end(RunEnded())
            self.ending = self.current
            self.current = None
        if traced:
            settings = event.ctx.settings
            tracer = exporting.tracer(settings)
            self.current = RunTrace(tracer, event.ctx, content=settings.trace_content)
        self._listen(self.current is not None or self.ending is not None)

    def _listen(self, wanted: bool) -> None:
        if wanted and not self._unsubscribe:
            events = self.chat.events
            step: dict[type[Any], Callable[[Any], None]] = {
                MonologueStarted: self._step(RunTrace.monologue_started),
                ModelCalled: self._step(RunTrace.model_called),
                ToolStarted: self._step(RunTrace.tool_started),
                ToolEnded: self._step(RunTrace.tool_ended),
                IterationEnded: self._step(RunTrace.iteration_ended),
                StateChanged: self._step(RunTrace.state_changed),
                RunEnded: self._run_ended,
            }
            self._unsubscribe = [events.subscribe(kind, fn) for kind, fn in step.items()]
        elif not wanted:
            for unsubscribe in self._unsubscribe:
                unsubscribe()
            self._unsubscribe = []

    def _step(self, method: Callable[[RunTrace, Any], None]) -> Callable[[Any], None]:
        def told(event: Any) -> None:
            if self.current is not None:
                method(self.current, event)

        return told

    def _run_ended(self, event: RunEnded) -> None:
        if self.ending is not None and self.chat.runner.running:
            ended, self.ending = self.ending, None  # the run before the one that runs now
        else:
            ended, self.current = self.current, None
        if ended is not None:
            ended.end(event)
        self._listen(self.current is not None or self.ending is not None)
