"""Branching a chat at one of its log items, from the page and the external API:

    POST /api/chats/<id>/branch, /api/v1/chats/<id>/branch   {"at": <the item's "no">}
         → {"context_id": "<the new chat>"}

The new chat holds the chat as it stood at that item (store/chat_branches.py) and is
the asker's; a running chat is branched from its state now. Another person's chat, or
none, is a 404; an item the chat does not have is a 400 saying which it has. In a
cluster the chat is found as every chat route finds it (`ChatManager.get`: a chat
another node runs is relayed there).
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from pydantic import Field, StrictInt

from server.routes import payloads
from server.routes.routing import body, chat, chats
from server.security import identity

HINT = 'send {"at": <the number ("no") of the log item to branch at>}'


class Branch(payloads.Payload):
    """Where to branch: the log item's number."""

    at: StrictInt = Field(ge=0)


def branch(chat_id: str) -> Response:
    parent = chat(chat_id)  # an unknown chat (or another's) is a 404 whatever the body says
    wanted = body(Branch, HINT)
    made = chats().branch(parent.id, wanted.at, identity.viewer())
    return jsonify({"context_id": made.id, "name": made.name})


def add_routes(blueprint: Blueprint, prefix: str) -> None:
    """The route under `prefix` of `blueprint`: the page's and the API's."""
    blueprint.add_url_rule(f"{prefix}/chats/<chat_id>/branch", "chat_branch", branch,
                           methods=["POST"])  # fmt: skip


branch_pages = Blueprint("chat_branches", __name__)
add_routes(branch_pages, "/api")
