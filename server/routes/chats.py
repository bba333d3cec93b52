"""HTTP routes for the user's habits with chats: run the last message again, search chats.

They sit behind the same guards as every page route (Host, login, CSRF on
changes: server/security/guard.py). The work itself is in core/rerun.py and
store/chat_search.py; these only validate and answer.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request
from pydantic import Field

from core.agent_types import UserMessage
from core.rerun import rerun_last
from helpers.errors import RunError
from server.routes import payloads
from server.routes.routing import body, chat, chats, error
from server.security import identity
from store.chat_search import find_chats

chat_habits = Blueprint("chat_habits", __name__)

#: Longest search text (a search is for a few words).
QUERY_LIMIT = 200


class Rerun(payloads.Payload):
    """Run the last message again; `message` replaces its text (Edit), absent: Resend."""

    message: str | None = Field(default=None, min_length=1, max_length=payloads.MESSAGE_LIMIT)


@chat_habits.post("/api/chats/<chat_id>/rerun")
def rerun(chat_id: str) -> Response | tuple[Response, int]:
    """Cut the chat back to before the last message and run it again (edited or not)."""
    wanted = body(Rerun)
    context = chat(chat_id)
    try:
        rerun_last(context, UserMessage, wanted.message)
    except RunError as exc:  # a run goes on: the user stops it first
        return error(str(exc), 409)
    return jsonify({"ok": True})


@chat_habits.get("/api/chats/search")
def search() -> Response | tuple[Response, int]:
    """The ids of the chats whose name or messages hold the text `q` (any case), and the
    words around it in each one's messages ("" where the name holds it)."""
    query = request.args.get("q", "").strip()
    if len(query) > QUERY_LIMIT:
        return error(f"search for at most {QUERY_LIMIT} characters")
    if not query:
        return jsonify({"ids": [], "snippets": {}})
    found = find_chats(chats(), query, identity.viewer())
    return jsonify({"ids": [chat_id for chat_id, _ in found], "snippets": dict(found)})
