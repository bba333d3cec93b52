"""Pushing changes to browsers: log deltas, chat state, chat-list deltas and notifications.

Agents change their logs on the agents' loop, often (every streamed chunk).
Each change only marks its chat as dirty; one pusher thread wakes, waits a
few milliseconds for more changes to pile up, then sends each dirty chat's
items changed since its last send (the log's versions make this exact: no
item missed, none twice) and its state. Senders never block the agents.

A chat no page watches (driven through the API, say) is not described at
all: its sends are skipped and its version taken as sent. A page that
subscribes later gets everything up to then in its subscription's answer
(server/sockets.py), so skipping loses nothing; it saved 1-2 ms of CPU a
step, taken from the agents (one interpreter lock).

Notifications (store/notification_owners.py, fed by store/notification_feed.py) go
as `notifications:delta` to the pages of the person whose they are (to every page
in the desktop mode): each page keeps the unread count and decides which ones to
toast.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.events import ChatSaved, RunEnded, RunStarted, StateChanged
from server.routes import views
from store.chats import ChatEvent, ChatManager
from store.notification_feed import NotificationFeed
from store.notifications import Change

if TYPE_CHECKING:
    from core.chat import Chat
    from core.log import LogItem
    from server.socketio_import import SocketIO

log = logging.getLogger(__name__)

#: Seconds to gather changes before sending: many chunks become one message.
COALESCE = 0.004
#: Seconds between two state updates that only follow log changes (the state's
#: progress line); run state changes (start, end, pause) are sent at once.
STATE_INTERVAL = 0.25
#: Seconds the pusher waits for the agents' loop to describe a chat's state.
STATE_TIMEOUT = 2.0


def room(chat_id: str) -> str:
    return f"chat:{chat_id}"


def user_room(name: str) -> str:
    """Every page of user `name` is in it (server/sockets.py): their chat list's news."""
    return f"user:{name}"


class Pusher:
    """Watches every chat and sends what changed to the browsers that look at it."""

    def __init__(self, socketio: SocketIO, chats: ChatManager, feed: NotificationFeed,
                 everywhere: bool = False) -> None:  # fmt: skip
        self.socketio = socketio
        #: A node of a cluster: pages of other nodes may watch any chat (their rooms are
        #: theirs to know), so every chat's news is sent through the message queue.
        self.everywhere = everywhere
        self.chats = chats
        self.feed = feed
        self._lock = threading.Lock()
        self._dirty_logs: set[str] = set()
        self._dirty_states: set[str] = set()
        self._list: dict[str, str] = {}  # chat id → last list event kind
        #: Chat id → its row as last sent: a chat is saved (and so "changed") after every
        #: step, but its row (name, times, run state) rarely changes with it.
        self._rows: dict[str, dict[str, Any]] = {}
        #: Chat id → whose it is (their pages alone hear of it), from the chat list's events.
        self._owners: dict[str, str | None] = {}
        self._sent: dict[str, tuple[str, int]] = {}  # chat id → (log guid, version sent)
        self._wake = threading.Event()
        self._state_sent: dict[str, float] = {}
        self._state_due: set[str] = set()  # log-driven state updates held back
        #: History changes to send, each with whose it is (None: every page).
        self._notifications: list[tuple[str | None, Change]] = []
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="cadre-push", daemon=True)

    def start(self) -> Pusher:
        for context in self.chats.registry.all():
            self.watch(context)
        self.chats.subscribe(self._on_chat_event)
        self.feed.notifications.subscribe(self._on_notification)
        self.feed.start()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()
        self._thread.join(5)

    # -- marking (called from any thread, must be quick) -------------------------

    def watch(self, context: Chat) -> None:
        chat_id = context.id
        with self._lock:
            replaced = chat_id in self._sent
            if not replaced:
                self._sent[chat_id] = (context.log.guid, context.log.version)
        if replaced:  # a reset chat: the next send carries its new guid
            self._mark(self._dirty_logs, chat_id)
        # The log's own change feed: every item change, streamed chunks included.
        context.log.subscribe(lambda item: self._on_item(chat_id, item))
        events = context.events
        for kind in (RunStarted, RunEnded, StateChanged):
            events.subscribe(kind, lambda _: self._mark(self._dirty_states, chat_id))
        events.subscribe(ChatSaved, lambda _: self._on_chat_event(
            ChatEvent("changed", chat_id, self.chats.owner_of(context))))  # fmt: skip

    def _on_item(self, chat_id: str, item: LogItem) -> None:
        self._mark(self._dirty_logs, chat_id)

    def _on_notification(self, owner: str | None, change: Change) -> None:
        # On whichever thread changed the history (the agents', a page's): queue only.
        with self._lock:
            self._notifications.append((owner, change))
        self._wake.set()

    def _mark(self, target: set[str], chat_id: str) -> None:
        with self._lock:
            target.add(chat_id)
        self._wake.set()

    def _on_chat_event(self, event: ChatEvent) -> None:
        if event.kind == "added":
            context = self.chats.registry.get(event.chat_id)
            if context is not None:
                self.watch(context)
        with self._lock:
            self._owners[event.chat_id] = event.owner
            previous = self._list.get(event.chat_id)
            # "added" then "changed" before a send is still news of an addition.
            self._list[event.chat_id] = previous if previous == "added" and (
                event.kind == "changed") else event.kind  # fmt: skip
            if event.kind != "removed":
                self._dirty_states.add(event.chat_id)
        self._wake.set()

    # -- sending (the pusher thread) ---------------------------------------------

    def _run(self) -> None:
        while not self._stopped:
            self._wake.wait(STATE_INTERVAL if self._state_due else None)
            if self._stopped:
                return
            self._wake.clear()
            time.sleep(COALESCE)
            try:
                self.flush()
            except Exception:  # a failed send must not stop every later one
                log.exception("pushing changes to browsers failed")

    def flush(self) -> None:
        """Send everything marked so far."""
        with self._lock:
            logs, self._dirty_logs = self._dirty_logs, set()
            states, self._dirty_states = self._dirty_states, set()
            listed, self._list = self._list, {}
            notifications, self._notifications = self._notifications, []
        for chat_id in sorted(logs):
            self._guarded(self._send_log, chat_id, self._dirty_logs)
        # State costs a hop to the agents' loop: log changes alone update it at most
        # every STATE_INTERVAL, so streaming chunks are never held up behind it.
        now = time.monotonic()
        due = set(states)
        for chat_id in logs | self._state_due:
            if now - self._state_sent.get(chat_id, 0.0) >= STATE_INTERVAL:
                due.add(chat_id)
            else:
                self._state_due.add(chat_id)
        self._state_due -= due
        for chat_id in sorted(due):
            self._guarded(self._send_state, chat_id, self._dirty_states)
        for chat_id, kind in listed.items():
            self._send_list_delta(chat_id, kind)
        for owner, change in notifications:
            try:
                self._to_owner("notifications:delta", views.notification_change(change), owner)
            except Exception:  # one lost notification must not cost the others
                log.exception("sending a notification to browsers failed")

    def _guarded(self, send: Callable[[str], None], chat_id: str, retry: set[str]) -> None:
        """Send one chat's news; a failure is logged and the chat marked to try again."""
        try:
            send(chat_id)
        except Exception:  # one chat's failure must not cost the others their updates
            log.exception("pushing chat %s to browsers failed; will retry", chat_id)
            self._mark(retry, chat_id)

    def _watched(self, chat_id: str) -> bool:
        """Whether any page is in the chat's room (subscribed to it)."""
        server = self.socketio.server
        if server is None or self.everywhere:  # not set up to serve (yet), or a cluster's
            return True
        return next(iter(server.manager.get_participants("/", room(chat_id))), None) is not None

    def _send_state(self, chat_id: str) -> None:
        context = self.chats.registry.get(chat_id)
        if context is not None and self._watched(chat_id):
            state = self.chats.runtime.call(views.chat_state, context, timeout=STATE_TIMEOUT)
            self.socketio.emit("state", state, to=room(chat_id))
            self._state_sent[chat_id] = time.monotonic()

    def _send_log(self, chat_id: str) -> None:
        context = self.chats.registry.get(chat_id)
        if context is None:
            return
        with context.log.lock:
            current = (context.log.guid, context.log.version)
        # Read before looking at the room: a page that joins after the look subscribes
        # after this read, so its answer holds everything up to `current`.
        if not self._watched(chat_id):
            with self._lock:
                self._sent[chat_id] = current
            return
        with self._lock:
            guid, since = self._sent.get(chat_id, ("", 0))
        reset = guid != context.log.guid
        if reset:
            since = 0
        items = views.log_items(context, since)
        if not items and not reset:
            return
        # A reset log may be empty: its new guid alone tells pages to start over.
        version = max((item["version"] for item in items), default=context.log.version)
        with self._lock:
            self._sent[chat_id] = (context.log.guid, version)
        payload: dict[str, Any] = {
            "chat_id": chat_id,
            "guid": context.log.guid,
            "version": version,
            "items": items,
        }
        self.socketio.emit("log", payload, to=room(chat_id))

    def _send_list_delta(self, chat_id: str, kind: str) -> None:
        if kind == "removed":
            self._rows.pop(chat_id, None)
            with self._lock:
                owner = self._owners.pop(chat_id, None)
            self._to_owner("chats:delta", {"kind": "removed", "chat": {"id": chat_id}}, owner)
            return
        context = self.chats.registry.get(chat_id)
        if context is not None:
            summary = views.chat_summary(context)
            if kind == "changed" and self._rows.get(chat_id) == summary:
                return  # every page of its owner has this row already
            self._rows[chat_id] = summary
            self._to_owner("chats:delta", {"kind": kind, "chat": summary},
                           self.chats.owner_of(context))  # fmt: skip

    def _to_owner(self, event: str, data: dict[str, Any], owner: str | None) -> None:
        """To every page of `owner` only; to every page in the desktop mode (no accounts)."""
        if owner is None:
            self.socketio.emit(event, data)
        else:
            self.socketio.emit(event, data, to=user_room(owner))
