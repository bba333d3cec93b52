"""HTTP routes of the UI's "Context variables" editor: read and replace a chat's variables.

Behind the guards of every page route (Host, login, CSRF on changes:
server/security/guard.py). The editor sends the whole set it shows, so a save replaces
the chat's variables; the rules of names and values are core/prompt/chat_variables.py,
and a refused set changes nothing.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from pydantic import field_validator

from server.routes import payloads
from server.routes.routing import body, chat, chats

chat_variables = Blueprint("chat_variables", __name__)


class Variables(payloads.Payload):
    """The chat's whole set of variables, as the editor shows it."""

    variables: dict[str, str]

    @field_validator("variables", mode="before")
    @classmethod
    def _checked(cls, value: object) -> object:
        return payloads.variables_change(value, removals=False)


@chat_variables.get("/api/chats/<chat_id>/variables")
def read(chat_id: str) -> Response:
    return jsonify({"variables": dict(chat(chat_id).variables)})


@chat_variables.put("/api/chats/<chat_id>/variables")
def replace(chat_id: str) -> Response:
    context = chat(chat_id)  # an unknown chat is a 404 whatever the body says
    wanted = body(Variables)
    context.set_variables(wanted.variables, replace=True)
    chats().save_now(context)
    return jsonify({"variables": dict(context.variables)})
