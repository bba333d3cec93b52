"""HTTP routes for the user's habits with chats: run the last message again, search chats.

They sit behind the same guards as every page route (Host, login, CSRF on
changes: server/guard.py). The work itself is in core/rerun.py and
store/chat_search.py; these only validate and answer.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify, request
from pydantic import Field, ValidationError

from agent import UserMessage
from core.rerun import rerun_last
from helpers.errors import RunError, UserError
from server import payloads
from store.chat_search import search_chats
from store.chats import ChatManager

chat_habits = Blueprint("chat_habits", __name__)

#: Longest search text (a search is for a few words).
QUERY_LIMIT = 200


class Rerun(payloads.Payload):
    """Run the last message again; `message` replaces its text (Edit), absent: Resend."""

    message: str | None = Field(default=None, min_length=1, max_length=payloads.MESSAGE_LIMIT)


def _chats() -> ChatManager:
    manager: ChatManager = current_app.extensions["cadre.chats"]
    return manager


def _error(message: str, status: int) -> tuple[Response, int]:
    return jsonify({"error": message}), status


@chat_habits.post("/api/chats/<chat_id>/rerun")
def rerun(chat_id: str) -> Response | tuple[Response, int]:
    """Cut the chat back to before the last message and run it again (edited or not)."""
    try:
        body = Rerun.model_validate(request.get_json(silent=True) or {})
    except ValidationError as exc:
        return _error(payloads.problem(exc), 400)
    try:
        context = _chats().get(chat_id)
        rerun_last(context, UserMessage, body.message)
    except RunError as exc:  # a run goes on: the user stops it first
        return _error(str(exc), 409)
    except UserError as exc:
        status = 404 if str(exc).startswith("no chat with id") else 400
        return _error(str(exc), status)
    return jsonify({"ok": True})


@chat_habits.get("/api/chats/search")
def search() -> Response | tuple[Response, int]:
    """The ids of the chats whose name or messages hold the text `q` (any case)."""
    query = request.args.get("q", "").strip()
    if len(query) > QUERY_LIMIT:
        return _error(f"search for at most {QUERY_LIMIT} characters", 400)
    if not query:
        return jsonify({"ids": []})
    return jsonify({"ids": search_chats(_chats(), query)})
