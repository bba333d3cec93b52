"""Socket.IO events of the page (see protocol.md): chats, subscriptions, controls.

Each handler validates its payload and answers through the acknowledgement:
`{"ok": true, ...}` or `{"ok": false, "error": ...}`. Nothing here waits on an
agent: runs are started on the agents' loop and their progress is pushed.

A connection must come for an allowed host from an allowed origin
(server/security/hosts.py) with a live session; every event checks the session again,
and the sockets of a session that ends (logout, password change) are closed.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import request, session
from pydantic import BaseModel, ValidationError

from core.agent_types import UserMessage
from helpers.errors import CadreError, Unavailable
from server.apis import agent_calls
from server.cluster.placement import place, relayed
from server.cluster.relay import MOVED, relay_event
from server.push import room, user_room
from server.routes import approvals, payloads, routing, views
from server.routes.attachments import resolve_attachments
from server.security import guard, identity
from server.security.hosts import HostPolicy
from server.security.sessions import SessionStore, session_key
from server.socketio_import import SocketIO, join_room, leave_room
from store.chats import ChatManager
from store.notification_owners import Notifications
from store.placement import Elsewhere

log = logging.getLogger(__name__)

Handler = Callable[..., dict[str, Any]]

SESSION_ENDED = "this session has ended: log in again"
#: The event a node asks of the node that runs a chat a page subscribes to (cluster mode);
#: no page sends it.
SNAPSHOT = "chat:snapshot"

#: Each event of the page: the `PageEvents` method that answers it and the payload it takes.
EVENTS: dict[str, tuple[str, type[BaseModel] | None]] = {
    "chats:list": ("list_chats", None),
    "chat:new": ("new_chat", payloads.NewChat),
    "chat:subscribe": ("subscribe", payloads.Subscribe),
    "chat:unsubscribe": ("unsubscribe", payloads.ChatRef),
    "chat:send": ("send", payloads.Send),
    "chat:approve": ("approve", payloads.Approve),
    "chat:rename": ("rename", payloads.Rename),
    "chat:delete": ("delete", payloads.ChatRef),
    "chat:reset": ("reset", payloads.ChatRef),
    "notifications:list": ("list_notifications", None),
    "notifications:read": ("mark_read", payloads.MarkRead),
    "notifications:clear": ("clear_notifications", None),
}
#: The controls of a running chat: the event and the chat's method it calls.
CONTROLS: dict[str, str] = {
    "chat:pause": "pause",
    "chat:resume": "resume",
    "chat:nudge": "nudge",
    "chat:stop": "stop",
    "chat:continue": "continue_interrupted",
}


def register(
    socketio: SocketIO,
    chats: ChatManager,
    sessions: SessionStore,
    policy: HostPolicy,
    notifications: Notifications,
) -> PageEvents:
    """Attach every event handler of the page to `socketio`."""
    events = PageEvents(socketio, chats, policy, notifications)
    # In a cluster, a session ended on another node is told here too (its sockets here
    # close), and the sessions of this node's sockets are looked at again after Redis was
    # away (cluster/redis_sessions.py).
    sessions.on_end(events.close_sockets, lambda: list(events.session_of.values()))
    for name, (method, model) in EVENTS.items():
        events.handlers[name] = Guarded(name, getattr(events, method), model)
    for name, action in CONTROLS.items():
        handler = functools.partial(events.control, action)
        events.handlers[name] = Guarded(name, handler, payloads.ChatRef)
    for name, guarded in events.handlers.items():
        socketio.on_event(name, guarded)
    # What a page's subscription to a chat another node runs asks of that node (cluster mode).
    events.handlers[SNAPSHOT] = Guarded(SNAPSHOT, events.snapshot, payloads.Subscribe)
    socketio.on("connect")(events.connect)
    socketio.on("disconnect")(events.disconnect)
    return events


@dataclass(frozen=True)
class Guarded:
    """One event's handler behind the session check, its payload validated, its errors
    answered in words: `{"ok": true, ...}` or `{"ok": false, "error": ...}`."""

    name: str
    handler: Handler
    model: type[BaseModel] | None

    def __call__(self, data: Any = None) -> dict[str, Any]:
        try:
            if not (relayed() or guard.logged_in()):
                return {"ok": False, "error": SESSION_ENDED}
        except Unavailable as exc:  # a cluster's Redis does not answer: said in words
            log.warning("socket event %s: %s", self.name, exc)
            return {"ok": False, "error": str(exc)}
        try:
            args = [self.model.model_validate(data or {})] if self.model else []
            return {"ok": True, **self.handler(*args)}
        except Elsewhere as exc:  # the chat runs on another node: that node answers
            if relayed():
                return {"ok": False, "error": MOVED}
            return relay_event(self.name, data, exc.node)
        except ValidationError as exc:
            return {"ok": False, "error": payloads.problem(exc)}
        except CadreError as exc:
            return {"ok": False, "error": str(exc)}
        except Exception:
            return {"ok": False, "error": routing.incident(f"socket event {self.name}")}


class PageEvents:
    """What the page's events do, over one server's chats and notifications; which
    socket watches which chat, and which login session each socket belongs to."""

    def __init__(
        self,
        socketio: SocketIO,
        chats: ChatManager,
        policy: HostPolicy,
        notifications: Notifications,
    ) -> None:
        self.socketio = socketio
        self.chats = chats
        self.policy = policy
        self.notifications = notifications
        self.watching: dict[str, str] = {}  # socket id → the chat it is subscribed to
        self.session_of: dict[str, str] = {}  # socket id → the key of its login session
        #: Each event's guarded handler, by name (a node hands another a page's event).
        self.handlers: dict[str, Guarded] = {}

    def on_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.chats.runtime.call(fn, *args)

    # -- connections -------------------------------------------------------------

    def connect(self, *_args: Any) -> bool:
        # A page from another site must never drive Cadre; nor may anyone not logged in.
        # (The host and origin were checked before, in HostGuard and by engine.io; the test
        # client skips both, and one more look costs nothing.)
        origin = request.headers.get("Origin")
        allowed = self.policy.allows_host(request.host)
        if not allowed or (origin and not self.policy.allows_origin(origin)):
            log.warning("refused a Socket.IO connection for %r from origin %r",
                        request.host[:100], (origin or "")[:100])  # fmt: skip
            return False
        sid = request.sid  # type: ignore[attr-defined]
        # Known by its session before the check: an end heard meanwhile (from another node)
        # closes it, an end heard before fails the check.
        if isinstance(session.get("sid"), str):
            self.session_of[sid] = session_key(session["sid"])
        try:
            live = not guard.first_visit() and guard.logged_in()
        except Unavailable as exc:  # a cluster's Redis does not answer: who it is is unknown
            log.warning("refused a Socket.IO connection: %s", exc)
            live = False
        if not live:
            self.session_of.pop(sid, None)
            return False
        viewer = identity.viewer()
        if viewer is not None:
            join_room(user_room(viewer))  # their chat list's news (server/push.py)
        return True

    def disconnect(self, *_args: Any) -> None:
        self.watching.pop(request.sid, None)  # type: ignore[attr-defined]
        self.session_of.pop(request.sid, None)  # type: ignore[attr-defined]

    def close_sockets(self, ended: set[str]) -> None:
        """Close the sockets of login sessions that ended (logout, password change)."""
        for sid, key in list(self.session_of.items()):
            if key in ended:
                log.info("closing socket %s: its session ended", sid)
                self.socketio.server.disconnect(sid, namespace="/")

    # -- chats -------------------------------------------------------------------

    def list_chats(self) -> dict[str, Any]:
        summaries = self.chats.summaries(lambda c: self.on_loop(views.chat_summary, c),
                                         identity.viewer())  # fmt: skip
        # Damaged files are the admin's to look at (no owner can be read from them).
        damaged = [{"id": d.id, "reason": d.reason} for d in self.chats.damaged
                   if identity.is_admin()]  # fmt: skip
        return {"chats": summaries, "damaged": damaged}

    def new_chat(self, data: payloads.NewChat) -> dict[str, Any]:
        context = agent_calls.new_chat(self.chats, None, data.project or None, identity.viewer())
        return {"chat": self.on_loop(views.chat_summary, context)}

    def subscribe(self, data: payloads.Subscribe) -> dict[str, Any]:
        try:
            context = self.chats.get(data.chat_id, identity.viewer())
        except Elsewhere as exc:
            return self._subscribe_elsewhere(data, exc.node)
        self._watch(data.chat_id)
        return self.on_loop(views.chat_snapshot, context, data.guid, data.since)

    def _subscribe_elsewhere(self, data: payloads.Subscribe, node: str) -> dict[str, Any]:
        """Another node runs the chat: its news reaches this page through the message
        queue. That node says first whether the chat is this person's (and how it stands);
        only then is the page in its room, and what changed meanwhile is asked once more,
        so that nothing between the two is lost (what comes twice, the page takes once)."""
        first = relay_event(SNAPSHOT, data.model_dump(), node)
        if not first.get("ok"):
            return first
        self._watch(data.chat_id)
        since = payloads.Subscribe(chat_id=data.chat_id, guid=first["guid"], since=first["version"])
        again = relay_event(SNAPSHOT, since.model_dump(), node)
        if not again.get("ok"):
            return first  # its deltas come all the same
        if again["reset"]:
            return again
        items = {item["no"]: item for item in [*first["items"], *again["items"]]}
        return {**again, "items": sorted(items.values(), key=lambda item: item["no"]),
                "reset": first["reset"]}  # fmt: skip

    def snapshot(self, data: payloads.Subscribe) -> dict[str, Any]:
        """A chat's state and log for a page of another node (cluster mode)."""
        context = self.chats.get(data.chat_id, identity.viewer())
        return self.on_loop(views.chat_snapshot, context, data.guid, data.since)

    def _watch(self, chat_id: str) -> None:
        sid = request.sid  # type: ignore[attr-defined]
        previous = self.watching.get(sid)
        if previous and previous != chat_id:
            leave_room(room(previous))
        join_room(room(chat_id))
        self.watching[sid] = chat_id

    def unsubscribe(self, data: payloads.ChatRef) -> dict[str, Any]:
        leave_room(room(data.chat_id))
        self.watching.pop(request.sid, None)  # type: ignore[attr-defined]
        return {}

    def send(self, data: payloads.Send) -> dict[str, Any]:
        context = self.chats.get(data.chat_id, identity.viewer())
        place(self.chats, context)  # Elsewhere: the run queue gave its run to another node
        files = resolve_attachments(context.id, data.attachments)
        running = context.running
        msg = UserMessage(data.message, attachments=files)
        context.communicate(msg, data.broadcast, data.to)
        return {"intervention": running}

    def control(self, action: str, data: payloads.ChatRef) -> dict[str, Any]:
        """One of CONTROLS: pause, resume, nudge, stop or continue the chat."""
        getattr(self.chats.get(data.chat_id, identity.viewer()), action)()
        return {}

    def approve(self, data: payloads.Approve) -> dict[str, Any]:
        context = self.chats.get(data.chat_id, identity.viewer())
        approvals.answer(context, data.item_id, data.approved, data.reason, data.always)
        return {}

    def rename(self, data: payloads.Rename) -> dict[str, Any]:
        self.chats.rename(data.chat_id, data.name, identity.viewer())
        return {}

    def delete(self, data: payloads.ChatRef) -> dict[str, Any]:
        self.chats.delete(data.chat_id, identity.viewer())
        return {}

    def reset(self, data: payloads.ChatRef) -> dict[str, Any]:
        self.chats.reset(data.chat_id, identity.viewer())
        return {}

    # -- notifications: the page's user's own (store/notification_owners.py) -------

    def list_notifications(self) -> dict[str, Any]:
        mine = self.notifications.items(identity.viewer())
        items = [item.model_dump(mode="json") for item in mine]
        return {"items": items, "unread": sum(not item["read"] for item in items)}

    def mark_read(self, data: payloads.MarkRead) -> dict[str, Any]:
        # Every page of theirs hears of it through the pusher's `notifications:delta`.
        return {"ids": self.notifications.of(identity.viewer()).mark_read(data.ids)}

    def clear_notifications(self) -> dict[str, Any]:
        self.notifications.of(identity.viewer()).clear()
        return {}
