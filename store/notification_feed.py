"""What goes into the notification histories: watching every chat for news worth keeping.

Each entry goes to the history of the chat's owner (store/notification_owners.py; a
chat from before accounts is the first admin's).

- a `notify` log item, in any chat: the notify_user tool, the scheduler's report at the
  end of a task's run (its kvps carry `type` and `task`);
- a run that ended in an error (in plain words: `failure_words`);
- a run that finished with Agent 0's answer after at least `notify_long_run` seconds
  (the chat's settings). Whether to toast it is the page's choice: not for the chat
  the user is looking at;
- a tool call held for the person's answer (the tool policy's `ask`), once per call.

A stopped run leaves nothing: the user stopped it. Nor does the end of a scheduled
task's run: the scheduler's own report names the task. Each chat is watched from when
the chat manager lists it (a chat read from disk later, a new one, a reset one).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from core.events import RunEnded, RunStarted
from helpers.errors import CadreError, ProviderError
from store.chats import ChatEvent, ChatManager
from store.notification_owners import Notifications
from store.notifications import Kind

if TYPE_CHECKING:
    from core.chat import Chat
    from core.log import LogItem

#: Notify item ids remembered (each item is kept once; its later changes are not news).
SEEN_KEPT = 1000
#: What a person reads of a failure that is a bug of Cadre's (the runner logged its
#: traceback): its exception's own text means nothing to them.
UNEXPECTED = (
    "Cadre ran into a problem of its own and stopped this run. The server's log has the "
    "details; sending the message again may work."
)


MODEL_FAILED = "The model call failed; the chat's error card has the details."


def failure_words(error: BaseException) -> str:
    """A run's failure as the person reads it: the provider's fault in plain words with
    what to do (the chat's error card says the same), a Cadre error's own words, and
    for anything else (a bug) no exception text."""
    if isinstance(error, ProviderError):
        return error.fault.text if error.fault is not None else MODEL_FAILED
    # The runner wraps a bug's exception so ("unexpected error: KeyError: 'x'").
    if isinstance(error, CadreError) and not str(error).startswith("unexpected error"):
        return str(error) or UNEXPECTED
    return UNEXPECTED


class NotificationFeed:
    """Adds each chat's news to its owner's history in `notifications`."""

    def __init__(self, chats: ChatManager, notifications: Notifications) -> None:
        self.chats = chats
        self.notifications = notifications
        self._lock = threading.Lock()
        self._seen: dict[str, None] = {}  # ids of notify items kept (oldest first)
        self._started: dict[str, float] = {}  # chat id → when its run started (monotonic)

    def start(self) -> NotificationFeed:
        for context in self.chats.registry.all():
            self.watch(context)
        self.chats.subscribe(self._on_chat_event)
        return self

    def _on_chat_event(self, event: ChatEvent) -> None:
        if event.kind == "added":
            context = self.chats.registry.get(event.chat_id)
            if context is not None:
                self.watch(context)

    def watch(self, context: Chat) -> None:
        chat_id = context.id
        context.log.subscribe(lambda item: self._on_item(context, item))
        context.events.subscribe(RunStarted, lambda _: self._on_start(chat_id))
        context.events.subscribe(RunEnded, lambda event: self._on_end(context, event))

    def _add(self, context: Chat, title: str, message: str, kind: Kind, level: str,
             task: str | None = None) -> None:  # fmt: skip
        """An entry about `context`, for its owner (asked now: a chat handed over is its
        new owner's news)."""
        self.notifications.add(self.chats.owner_of(context), title, message, kind=kind,
                               type=level, chat_id=context.id, task=task)  # fmt: skip

    def _on_item(self, context: Chat, item: LogItem) -> None:
        # Inside the log's change feed (its lock held, every streamed chunk): be quick.
        held = item.kvps.get("approval") == "pending"
        if item.type != "notify" and not held:
            return
        if not self._first_time(f"held:{item.id}" if held else item.id):
            return
        if held:
            tool, agent = item.kvps.get("approval_tool") or item.heading, item.agent
            who = agent or f"A{item.agentno}"
            self._add(context, "Waiting for your answer", f"{who} wants to use {tool}: "
                      "allow or deny it in the chat.", "approval", "warning")  # fmt: skip
            return
        task, level = item.kvps.get("task"), str(item.kvps.get("type", "info"))
        self._add(context, item.heading, item.content, "notify", level,
                  str(task) if task is not None else None)  # fmt: skip

    def _first_time(self, key: str) -> bool:
        """Whether `key` is news (each item is kept once; its later changes are not)."""
        with self._lock:
            if key in self._seen:
                return False
            self._seen[key] = None
            if len(self._seen) > SEEN_KEPT:
                self._seen.pop(next(iter(self._seen)))
            return True

    def _on_start(self, chat_id: str) -> None:
        with self._lock:
            self._started.setdefault(chat_id, time.monotonic())

    def _on_end(self, context: Chat, event: RunEnded) -> None:
        with self._lock:
            started = self._started.pop(context.id, None)
        if context.task_run is not None:
            return  # a scheduled task's run: the scheduler reports it, naming the task
        # The title names no chat: a chat is named after its first run, and may be renamed;
        # the page shows each entry's chat by its name of the moment.
        if event.error is not None:
            self._add(context, "Run failed", failure_words(event.error), "error", "error")
            return
        if event.answer is None or started is None:
            return  # stopped by the user, or a run this feed did not see start
        took = time.monotonic() - started
        if took >= context.agent0.ctx.settings.notify_long_run:
            self._add(context, "Run finished", event.answer, "finished", "success")
