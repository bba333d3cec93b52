"""Replay of a saved chat (core/replay, store/replaying.py), from the chat menu and the API:

    POST /api/chats/<id>/replay, /api/v1/chats/<id>/replay
        body (optional): {"tools": "rerun" | "recorded", "on_difference": "stop" | "live"}
        → {"context_id": "<the replay chat>"}

The replay chat is made at once and replays in the background; its log says how it went.
A chat the asker may not see is a 404 (another node's is relayed there, as every chat
route's: `routing.chat`); a chat that is working, or has no message to replay, or a body
that names another choice is a 400 in words.
"""

from __future__ import annotations

from typing import Literal

from flask import Blueprint, Response, jsonify

from server.routes import payloads
from server.routes.routing import body, chat, chats
from server.security import identity
from store import replaying

#: What to send, said with every refused body.
HINT = ('send nothing, or {"tools": "rerun" or "recorded", '
        '"on_difference": "stop" or "live"}')  # fmt: skip


class ReplayAsk(payloads.Payload):
    """How to replay: tools run again or give their recorded results; at a difference, stop
    or go on live."""

    tools: Literal["rerun", "recorded"] = "rerun"
    on_difference: Literal["stop", "live"] = "stop"


def replay(chat_id: str) -> Response:
    source = chat(chat_id)  # an unknown chat is a 404 whatever the body says
    wanted = body(ReplayAsk, HINT)
    started = replaying.start_replay(chats(), source.id, identity.viewer(), wanted.tools,
                                     wanted.on_difference)  # fmt: skip
    return jsonify({"context_id": started.chat.id})


def add_routes(blueprint: Blueprint, prefix: str) -> None:
    """The route under `prefix` of `blueprint`: the page's and the API's."""
    blueprint.add_url_rule(f"{prefix}/chats/<chat_id>/replay", "chat_replay", replay,
                           methods=["POST"])  # fmt: skip


replay_pages = Blueprint("chat_replay", __name__)
add_routes(replay_pages, "/api")
