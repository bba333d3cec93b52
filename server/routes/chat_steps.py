"""Running a failed step again: `POST /api/chats/<chat_id>/items/<item_id>/retry`.

The error item a provider failure ended a run with offers Retry (see
core.failed_step); this starts the run again from there and returns at
once, the log shows how it goes.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from core import failed_step
from helpers.errors import UserError
from server.routes.routing import chat, error

steps = Blueprint("steps", __name__)


@steps.post("/api/chats/<chat_id>/items/<item_id>/retry")
def retry_step(chat_id: str, item_id: str) -> Response | tuple[Response, int]:
    context = chat(chat_id)
    try:
        context.runtime.call(failed_step.retry, context, item_id)
    except UserError as exc:  # the step is not retryable in the chat's state now
        return error(str(exc), 409)
    return jsonify({"ok": True})
