"""Socket.IO events of the page (see protocol.md): chats, subscriptions, controls.

Each handler validates its payload and answers through the acknowledgement:
`{"ok": true, ...}` or `{"ok": false, "error": ...}`. Nothing here waits on an
agent: runs are started on the agents' loop and their progress is pushed.

A connection must come for an allowed host from an allowed origin
(server/hosts.py) with a live session; every event checks the session again,
and the sockets of a session that ends (logout, password change) are closed.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from flask import request, session
from pydantic import BaseModel, ValidationError

from core.agent_types import UserMessage
from helpers.errors import CadreError
from server import agent_calls, guard, payloads, routing, views
from server.attachments import resolve_attachments
from server.hosts import HostPolicy
from server.push import room
from server.sessions import SessionStore, session_key
from server.socketio_import import SocketIO, join_room, leave_room
from store.chats import ChatManager
from store.notifications import NotificationHistory

log = logging.getLogger(__name__)

P = TypeVar("P", bound=BaseModel)
Handler = Callable[..., dict[str, Any]]


SESSION_ENDED = "this session has ended: log in again"


def register(
    socketio: SocketIO,
    chats: ChatManager,
    sessions: SessionStore,
    policy: HostPolicy,
    notifications: NotificationHistory,
) -> None:
    """Attach every event handler of the page to `socketio`."""
    watching: dict[str, str] = {}  # socket id → the chat it is subscribed to
    session_of: dict[str, str] = {}  # socket id → the key of its login session

    def close_sockets(ended: set[str]) -> None:
        for sid, key in list(session_of.items()):
            if key in ended:
                log.info("closing socket %s: its session ended", sid)
                socketio.server.disconnect(sid, namespace="/")

    sessions.on_end(close_sockets)

    def event(name: str, model: type[BaseModel] | None = None) -> Callable[[Handler], Handler]:
        def wrap(handler: Handler) -> Handler:
            @functools.wraps(handler)
            def on_event(data: Any = None) -> dict[str, Any]:
                if not guard.logged_in():
                    return {"ok": False, "error": SESSION_ENDED}
                try:
                    args = [model.model_validate(data or {})] if model else []
                    return {"ok": True, **handler(*args)}
                except ValidationError as exc:
                    return {"ok": False, "error": payloads.problem(exc)}
                except CadreError as exc:
                    return {"ok": False, "error": str(exc)}
                except Exception:
                    return {"ok": False, "error": routing.incident(f"socket event {name}")}

            socketio.on_event(name, on_event)
            return handler

        return wrap

    def on_loop(fn: Callable[..., Any], *args: Any) -> Any:
        return chats.runtime.call(fn, *args)

    @event("chats:list")
    def list_chats() -> dict[str, Any]:
        summaries = chats.summaries(lambda c: on_loop(views.chat_summary, c))
        damaged = [{"id": d.id, "reason": d.reason} for d in chats.damaged]
        return {"chats": summaries, "damaged": damaged}

    @event("chat:new", payloads.NewChat)
    def new_chat(data: payloads.NewChat) -> dict[str, Any]:
        context = agent_calls.new_chat(chats, None, data.project or None)
        return {"chat": on_loop(views.chat_summary, context)}

    @event("chat:subscribe", payloads.Subscribe)
    def subscribe(data: payloads.Subscribe) -> dict[str, Any]:
        context = chats.get(data.chat_id)
        sid = request.sid  # type: ignore[attr-defined]
        previous = watching.get(sid)
        if previous and previous != data.chat_id:
            leave_room(room(previous))
        join_room(room(data.chat_id))
        watching[sid] = data.chat_id

        def snapshot() -> dict[str, Any]:
            reset = data.guid != context.log.guid
            since = 0 if reset else data.since
            return {
                "guid": context.log.guid,
                "version": context.log.version,
                "items": views.log_items(context, since),
                "state": views.chat_state(context),
                "reset": reset,
            }

        return on_loop(snapshot)

    @event("chat:unsubscribe", payloads.ChatRef)
    def unsubscribe(data: payloads.ChatRef) -> dict[str, Any]:
        leave_room(room(data.chat_id))
        watching.pop(request.sid, None)  # type: ignore[attr-defined]
        return {}

    @event("chat:send", payloads.Send)
    def send(data: payloads.Send) -> dict[str, Any]:
        context = chats.get(data.chat_id)
        files = resolve_attachments(context.id, data.attachments)
        running = context.running
        msg = UserMessage(data.message, attachments=files)
        context.communicate(msg, data.broadcast, data.to)
        return {"intervention": running}

    def control(name: str, action: Callable[[Any], Any]) -> None:
        @event(name, payloads.ChatRef)
        def handler(data: payloads.ChatRef) -> dict[str, Any]:
            action(chats.get(data.chat_id))
            return {}

    control("chat:pause", lambda c: c.pause())
    control("chat:resume", lambda c: c.resume())
    control("chat:nudge", lambda c: c.nudge())
    control("chat:stop", lambda c: c.stop())
    control("chat:continue", lambda c: c.continue_interrupted())

    @event("chat:approve", payloads.Approve)
    def approve(data: payloads.Approve) -> dict[str, Any]:
        chats.get(data.chat_id).approve(data.item_id, data.approved)
        return {}

    @event("chat:rename", payloads.Rename)
    def rename(data: payloads.Rename) -> dict[str, Any]:
        chats.rename(data.chat_id, data.name)
        return {}

    @event("chat:delete", payloads.ChatRef)
    def delete(data: payloads.ChatRef) -> dict[str, Any]:
        chats.delete(data.chat_id)
        return {}

    @event("chat:reset", payloads.ChatRef)
    def reset(data: payloads.ChatRef) -> dict[str, Any]:
        chats.reset(data.chat_id)
        return {}

    @event("notifications:list")
    def list_notifications() -> dict[str, Any]:
        items = [item.model_dump(mode="json") for item in notifications.items()]
        return {"items": items, "unread": sum(not item["read"] for item in items)}

    @event("notifications:read", payloads.MarkRead)
    def mark_read(data: payloads.MarkRead) -> dict[str, Any]:
        # Every page hears of it through the pusher's `notifications:delta`.
        return {"ids": notifications.mark_read(data.ids)}

    @event("notifications:clear")
    def clear_notifications() -> dict[str, Any]:
        notifications.clear()
        return {}

    @socketio.on("connect")
    def connect(*_args: Any) -> bool:
        # A page from another site must never drive Cadre; nor may anyone not logged in.
        # (The host and origin were checked before, in HostGuard and by engine.io; the test
        # client skips both, and one more look costs nothing.)
        origin = request.headers.get("Origin")
        if not policy.allows_host(request.host) or (origin and not policy.allows_origin(origin)):
            log.warning("refused a Socket.IO connection for %r from origin %r",
                        request.host[:100], (origin or "")[:100])  # fmt: skip
            return False
        if not guard.logged_in():
            return False
        if isinstance(session.get("sid"), str):
            session_of[request.sid] = session_key(session["sid"])  # type: ignore[attr-defined]
        return True

    @socketio.on("disconnect")
    def disconnect(*_args: Any) -> None:
        watching.pop(request.sid, None)  # type: ignore[attr-defined]
        session_of.pop(request.sid, None)  # type: ignore[attr-defined]
