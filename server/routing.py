"""What every HTTP route module shares: the chat store, validated bodies, error replies.

An error reply is always `{"error": "<what is wrong, in words>"}` with a status
chosen by the exception's type (`STATUS`), never by its text: `NotFound` is a
404, any other `UserError` a 400. `install` registers that mapping once for the
whole app, so a route raises and does not pick a status itself; a route with a
status of its own for one call (a run that goes on: 409) catches that call's
error type there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from flask import Flask, Response, current_app, jsonify, request
from pydantic import BaseModel, ValidationError

from helpers.errors import NotFound, UserError
from server import payloads

if TYPE_CHECKING:
    from agent import AgentContext
    from store.chats import ChatManager

P = TypeVar("P", bound=BaseModel)

#: The status of each kind of error a person can fix, most specific first.
STATUS: tuple[tuple[type[UserError], int], ...] = ((NotFound, 404), (UserError, 400))


def chats() -> ChatManager:
    """The app's chat store."""
    manager: ChatManager = current_app.extensions["cadre.chats"]
    return manager


def chat(chat_id: str) -> AgentContext:
    """The chat `chat_id`; NotFound (a 404) when there is none."""
    return chats().get(chat_id)


def error(message: str, status: int = 400) -> tuple[Response, int]:
    """The reply to a request that failed: the problem in words, and its status."""
    return jsonify({"error": message}), status


def body(model: type[P]) -> P:
    """The request's JSON body as `model`; UserError (a 400) saying what is wrong and
    where ("message: Field required"). No body reads as an empty object."""
    try:
        return model.model_validate(request.get_json(silent=True) or {})
    except ValidationError as exc:
        raise UserError(payloads.problem(exc)) from None


def status_for(exc: UserError) -> int:
    """The HTTP status of `exc`, by its type."""
    return next(status for kind, status in STATUS if isinstance(exc, kind))


def install(app: Flask) -> None:
    """Answer every `UserError` a route raises with its status and its text."""

    @app.errorhandler(UserError)
    def user_error(exc: UserError) -> tuple[Response, int]:
        return error(str(exc), status_for(exc))
