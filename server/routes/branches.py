"""Branching a chat at one of its log items, from the page and the external API:

    POST /api/chats/<id>/branch, /api/v1/chats/<id>/branch   {"at": <the item's "no">}
         → {"context_id": "<the new chat>", "chat": ChatSummary}

With `"message"` the item must be a message of the user's to Agent 0: the branch is cut
just before it and runs `message` in its place (an edit of an earlier message).

The new chat holds the chat as it stood at that item (store/chat_branches.py) and is
the asker's; a running chat is branched from its state now. Another person's chat, or
none, is a 404; an item the chat does not have is a 400 saying which it has. In a
cluster the chat is found as every chat route finds it (`ChatManager.get`: a chat
another node runs is relayed there).
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from pydantic import Field, StrictInt

from helpers.errors import UserError
from server.routes import payloads, views
from server.routes.routing import body, chat, chats
from server.security import identity

HINT = 'send {"at": <the number ("no") of the log item to branch at>}'


class Branch(payloads.Payload):
    """Where to branch: the log item's number."""

    at: StrictInt = Field(ge=0)
    #: An edit of the user's message at `at`: the branch runs this text in its place.
    message: str | None = Field(default=None, min_length=1, max_length=payloads.MESSAGE_LIMIT)


def branch(chat_id: str) -> Response:
    parent = chat(chat_id)  # an unknown chat (or another's) is a 404 whatever the body says
    wanted = body(Branch, HINT)
    text = wanted.message
    if text is not None and not text.strip():
        raise UserError("the edited message is empty: write something")
    made = chats().branch(parent.id, wanted.at, identity.viewer(), text)
    row = chats().runtime.call(views.chat_summary, made)
    return jsonify({"context_id": made.id, "chat": row})


def branches_of(chat_id: str) -> list[dict[str, object]]:
    """The asker's branches of the chat `chat_id`: `{id, name, at}` each, newest first."""
    call = chats().runtime.call
    rows = chats().summaries(lambda c: call(views.chat_summary, c), identity.viewer())
    return [{"id": r["id"], "name": r["name"], "at": r["parent"]["at"]}
            for r in rows if (r.get("parent") or {}).get("id") == chat_id]  # fmt: skip


def add_routes(blueprint: Blueprint, prefix: str) -> None:
    """The route under `prefix` of `blueprint`: the page's and the API's."""
    blueprint.add_url_rule(f"{prefix}/chats/<chat_id>/branch", "chat_branch", branch,
                           methods=["POST"])  # fmt: skip


branch_pages = Blueprint("chat_branches", __name__)
add_routes(branch_pages, "/api")
