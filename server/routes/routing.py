"""What every HTTP route module shares: the chat store, validated bodies, error replies.

An error reply is always `{"error": "<what is wrong, in words>"}` with a status
chosen by the exception's type (`STATUS`), never by its text: `NotFound` is a
404, any other `UserError` a 400, an `Unavailable` a 503. `install` registers that
mapping once for the whole app, so a route raises and does not pick a status itself;
a route with a status of its own for one call (a run that goes on: 409) catches that
call's error type there.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, TypeVar

from flask import Flask, Response, current_app, jsonify, request
from pydantic import BaseModel, ValidationError
from werkzeug.exceptions import BadRequest, HTTPException

from helpers.errors import Forbidden, NotFound, OverLimit, Unavailable, UserError
from server.routes import payloads
from server.security import identity

if TYPE_CHECKING:
    from core.chat import Chat
    from store.chats import ChatManager

log = logging.getLogger(__name__)

P = TypeVar("P", bound=BaseModel)

#: The status of each kind of error a person can fix, most specific first.
STATUS: tuple[tuple[type[UserError], int], ...] = (
    (NotFound, 404),
    (Forbidden, 403),
    (OverLimit, 429),
    (UserError, 400),
)


def chats() -> ChatManager:
    """The app's chat store."""
    manager: ChatManager = current_app.extensions["cadre.chats"]
    return manager


def chat(chat_id: str) -> Chat:
    """The chat `chat_id` of the user asking; NotFound (a 404) when there is none, or it is
    another's (the same answer: nobody learns another's chat ids)."""
    return chats().get(chat_id, identity.viewer())


def error(message: str, status: int = 400) -> tuple[Response, int]:
    """The reply to a request that failed: the problem in words, and its status."""
    return jsonify({"error": message}), status


#: The JSON kinds a body that should be an object may be instead, for the error.
_JSON_KINDS = {list: "a list", str: "a string", int: "a number", float: "a number",
               bool: "true or false"}  # fmt: skip


def body(model: type[P], hint: str = "") -> P:
    """The request's JSON body as `model`; UserError (a 400) saying what is wrong and
    where ("message: Field required"), then `hint` (what to send). No body reads as an
    empty object; a body that is there must be a JSON object: one that cannot be read is
    never taken for no body (a route whose fields all have defaults would act on it)."""
    after = f": {hint}" if hint else ""
    try:
        return model.model_validate(json_object(after))
    except ValidationError as exc:
        raise UserError(payloads.problem(exc) + after) from None


def json_object(after: str = "") -> dict[str, object]:
    """The request's body as a JSON object ({} for no body), or a UserError saying why it
    is not one (`after` is added to the words)."""
    if not request.get_data(cache=True).strip():
        return {}
    if not request.is_json:
        raise UserError(f"the body is not JSON ({request.mimetype or 'no type'}){after}")
    try:
        # The app's own reader: a body nested too deeply is refused (server/routes/json_body.py).
        data = current_app.json.loads(request.get_data())
    except BadRequest as exc:
        problem = f"the body is not JSON that can be read ({exc.description}){after}"
        raise UserError(problem) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise UserError(f"the body is not JSON ({exc}){after}") from None
    if not isinstance(data, dict):
        kind = "null" if data is None else _JSON_KINDS.get(type(data), type(data).__name__)
        raise UserError(f"the body must be a JSON object, not {kind}{after}")
    return data


def incident(what: str) -> str:
    """Log the exception being handled under a new incident id; the words for the reply.

    Never a traceback in a reply (HTTP or Socket.IO): the server log has it, and
    the person can quote the id."""
    number = uuid.uuid4().hex[:8]
    log.exception("%s failed (incident %s)", what, number)
    return f"internal error (incident {number})"


def status_for(exc: UserError) -> int:
    """The HTTP status of `exc`, by its type."""
    return next(status for kind, status in STATUS if isinstance(exc, kind))


def install(app: Flask) -> None:
    """Answer every error a route raises the same way: a `UserError` with its status and
    its text, an `Unavailable` (a cluster's Redis away) as a 503 with its text, an HTTP
    error (404, 405, 413, ...) with its own, anything else as a 500 that names an incident
    (the most specific handler wins)."""

    @app.errorhandler(UserError)
    def user_error(exc: UserError) -> tuple[Response, int]:
        return error(str(exc), status_for(exc))

    @app.errorhandler(Unavailable)
    def unavailable(exc: Unavailable) -> tuple[Response, int]:
        log.warning("%s %s: %s", request.method, request.path, exc)
        return error(str(exc), 503)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> tuple[Response, int]:
        return error(exc.description or exc.name, exc.code or 500)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> tuple[Response, int]:
        return error(incident("request"), 500)
