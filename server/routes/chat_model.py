"""A chat's model choice, as the chat header's picker and the external API change it:

    GET   /api/presets, /api/v1/presets              what the asker may choose: Default (the
                                                     settings' models) and the presets theirs
    PATCH /api/chats/<id>, /api/v1/chats/<id>        {"preset": "Fast"} runs the chat on a
                                                     preset; "" or null: on Default

The choice is the chat's alone and saved with it (store/model_choice.py); a chat between
runs takes it at once, a running one from its next run. A preset that is not one the
asker may choose is a 400 listing those they may.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from pydantic import Field

from server.routes import payloads
from server.routes.routing import body, chat, chats
from server.security import identity
from store import model_choice

#: What to send, said with every refused body.
HINT = 'send {"preset": "<a preset\'s name>"}, or {"preset": ""} for the settings\' models'


class ChatChange(payloads.Payload):
    """A change of a chat's settings: its model preset ("" or null: Default)."""

    preset: str | None = Field(max_length=64)


def presets() -> Response:
    return jsonify(model_choice.choices(identity.viewer()))


def change(chat_id: str) -> Response:
    context = chat(chat_id)  # an unknown chat is a 404 whatever the body says
    wanted = body(ChatChange, HINT)
    preset = model_choice.checked(wanted.preset, context.owner)
    chats().choose_model(context, preset)
    return jsonify({"model": chats().runtime.call(model_choice.choice_view, context),
                    "running": context.running})  # fmt: skip


def add_routes(blueprint: Blueprint, prefix: str) -> None:
    """The routes under `prefix` of `blueprint`: the page's and the API's."""
    blueprint.add_url_rule(f"{prefix}/presets", "presets", presets, methods=["GET"])
    blueprint.add_url_rule(f"{prefix}/chats/<chat_id>", "chat_change", change,
                           methods=["PATCH"])  # fmt: skip


chat_model_pages = Blueprint("chat_model", __name__)
add_routes(chat_model_pages, "/api")
