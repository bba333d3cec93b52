"""A Cadre chat's run events, as the bridge needs them: a run began (show "typing…"), a
run ended (send its answer), a tool call waits for approval (send buttons).

The events are told on the agents' loop; the bridge acts on its own loop, so each is
handed over as a plain record (`Ended`, `Waiting`) to the `Sink`, which must take it from
any thread. A chat is watched from the bridge's first message to it; a chat object
replaced since (a restore, a takeover) is watched again at the next message.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from core.events import RunEnded, RunStarted, StateChanged

if TYPE_CHECKING:
    from core.chat import Chat

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ended:
    """How a run of a chat ended: Agent 0's `answer`, or the `error` in words ("" with
    neither: it was stopped); where its work folder is (the files an answer names)."""

    answer: str | None
    error: str = ""
    work_setting: str = ""
    space: Path | None = None


@dataclass(frozen=True)
class Waiting:
    """A tool call held for a person's answer (core/approvals.py)."""

    item_id: str
    agent: str
    tool: str
    args: dict[str, Any] = field(default_factory=dict)


class Sink(Protocol):
    """Where a watched chat's news goes; called on the agents' loop: return at once."""

    def run_started(self, chat_id: str) -> None: ...

    def run_ended(self, chat_id: str, ended: Ended) -> None: ...

    def approval_waits(self, chat_id: str, waiting: Waiting) -> None: ...


class ChatWatch:
    """The chats the bridge listens to, each once (by chat id and object)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._watched: dict[str, tuple[Chat, list[Any]]] = {}
        self._lock = threading.Lock()
        #: Held calls already told, so a second "pending" of the chat does not repeat them.
        self._told: set[tuple[str, str]] = set()

    def watch(self, chat: Chat) -> None:
        """Listen to `chat` (blocks until subscribed on the agents' loop: call off it)."""
        with self._lock:
            known = self._watched.get(chat.id)
            if known is not None and known[0] is chat:
                return
            if known is not None:
                self._unsubscribe(known)
            self._watched[chat.id] = (chat, [])
        unsubscribes = chat.runtime.call(lambda: self._subscribe(chat)) if chat.runtime else []
        with self._lock:
            if chat.id in self._watched and self._watched[chat.id][0] is chat:
                self._watched[chat.id] = (chat, unsubscribes)

    def close(self) -> None:
        """Stop listening to every chat."""
        with self._lock:
            watched, self._watched = list(self._watched.values()), {}
        for known in watched:
            self._unsubscribe(known)

    def _unsubscribe(self, known: tuple[Chat, list[Any]]) -> None:
        chat, unsubscribes = known
        if chat.runtime is None or not unsubscribes:
            return
        try:
            chat.runtime.call(lambda: [undo() for undo in unsubscribes])
        except Exception:  # a stopped runtime: nothing listens any more anyway
            log.debug("telegram: chat %s could not be let go of", chat.id, exc_info=True)

    def _subscribe(self, chat: Chat) -> list[Any]:
        events = chat.events
        return [
            events.subscribe(RunStarted, lambda _e: self.sink.run_started(chat.id)),
            events.subscribe(RunEnded, lambda e: self.sink.run_ended(chat.id, _ended(chat, e))),
            events.subscribe(StateChanged, lambda e: self._changed(chat, e)),
        ]

    def _changed(self, chat: Chat, event: StateChanged) -> None:
        if event.change != "approval":
            return
        for held in chat.approvals.held():
            key = (chat.id, held.id)
            if held.future is not None and key not in self._told:
                self._told.add(key)
                self.sink.approval_waits(chat.id, Waiting(held.id, held.agent, held.shown,
                                                          dict(held.args)))  # fmt: skip


def _ended(chat: Chat, event: RunEnded) -> Ended:
    ctx = chat.agent0.ctx
    error = "" if event.error is None else (str(event.error) or type(event.error).__name__)
    return Ended(event.answer, error, ctx.settings.work_dir, ctx.space)
