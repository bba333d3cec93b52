"""A chat's model choice, as the chat header's picker and the external API change it:

    GET   /api/presets, /api/v1/presets              what the asker may choose: Default (the
                                                     settings' models), the presets theirs
                                                     and the configured models ("models")
    PATCH /api/chats/<id>, /api/v1/chats/<id>        {"preset": "Fast"} runs the chat on a
                                                     preset, {"model": "openai/x"} on a
                                                     configured model; "" or null: Default

The choice is the chat's alone and saved with it (store/model_choice.py); a chat between
runs takes it at once, a running one from its next run. A preset or model that is not
one the asker may choose is a 400 listing those they may.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from pydantic import Field

from helpers.errors import UserError
from server.routes import payloads
from server.routes.routing import body, chat, chats
from server.security import identity
from store import model_choice

#: What to send, said with every refused body.
HINT = ('send {"preset": "<a preset\'s name>"} or {"model": "<a configured model>"}, or '
        '{"preset": ""} for the settings\' models')  # fmt: skip
#: Neither sent: said as a missing field is.
MISSING = "preset or model: Field required"


class ChatChange(payloads.Payload):
    """A change of a chat's settings: its model preset, or a configured model by name ("" or
    null: Default)."""

    preset: str | None = Field(default=None, max_length=64)
    model: str | None = Field(default=None, max_length=200)


def presets() -> Response:
    return jsonify(model_choice.choices(identity.viewer()))


def change(chat_id: str) -> Response:
    context = chat(chat_id)  # an unknown chat is a 404 whatever the body says
    wanted = body(ChatChange, HINT)
    if not wanted.model_fields_set & {"preset", "model"}:
        raise UserError(f"{MISSING}: {HINT}")
    # Sent, a null is Default (as "" is).
    chosen = model_choice.checked_choice(wanted.preset or "", wanted.model, context.owner)
    chats().choose_model(context, *(chosen or ("", "")))
    return jsonify({"model": chats().runtime.call(model_choice.choice_view, context),
                    "running": context.running})  # fmt: skip


def add_routes(blueprint: Blueprint, prefix: str) -> None:
    """The routes under `prefix` of `blueprint`: the page's and the API's."""
    blueprint.add_url_rule(f"{prefix}/presets", "presets", presets, methods=["GET"])
    blueprint.add_url_rule(f"{prefix}/chats/<chat_id>", "chat_change", change,
                           methods=["PATCH"])  # fmt: skip


chat_model_pages = Blueprint("chat_model", __name__)
add_routes(chat_model_pages, "/api")
