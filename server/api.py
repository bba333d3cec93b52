"""The external HTTP API: other programs talk to Cadre's agents with an API key.

`X-API-Key` must match the `api_key` setting (env `CADRE_API_KEY`); an empty
setting disables the API. A message to a running chat is an intervention, as
in the UI.
"""

from __future__ import annotations

import concurrent.futures
import hmac
from typing import Any

from flask import Blueprint, Response, jsonify, request

from agent import UserMessage
from helpers.errors import CadreError
from helpers.settings import load_settings
from profiles.catalog import get_available_agents_dict
from server import payloads, views
from server.routing import body, chat, chats, error

#: Seconds a `"wait": true` call waits for Agent 0's answer.
WAIT_LIMIT = 900
#: Largest JSON body the API reads.
BODY_LIMIT = 1024 * 1024

api = Blueprint("api", __name__, url_prefix="/api/v1")


@api.before_request
def check_key() -> tuple[Response, int] | None:
    expected = load_settings().api_key
    if not expected:
        return error("the external API is disabled: set the api_key setting", 403)
    given = request.headers.get("X-API-Key", "")
    if not hmac.compare_digest(given.encode(), expected.encode()):
        return error("missing or wrong X-API-Key", 401)
    if (request.content_length or 0) > BODY_LIMIT:
        return error(f"request body over {BODY_LIMIT // 1024} KB", 413)
    return None


@api.post("/message")
def message() -> Response | tuple[Response, int]:
    data = body(payloads.ApiMessage)
    manager = chats()
    if data.context_id and data.profile:
        return error("profile applies only when the call starts a new chat", 400)
    if data.context_id:
        context = manager.get(data.context_id)
    else:
        overrides: dict[str, Any] = {}
        if data.profile:
            if data.profile not in get_available_agents_dict():
                return error(f"no available agent profile {data.profile!r}", 400)
            overrides["agent_profile"] = data.profile
        context = manager.new_chat(**overrides)
    if data.context:  # before the message, so that its run reads them
        context.set_variables(data.context)
        manager.save_now(context)
    msg = UserMessage(data.message)
    run = context.communicate(msg)
    if not data.wait:
        return jsonify({"context_id": context.id})
    try:
        assert isinstance(run, concurrent.futures.Future)
        answer = context.runner.answer_for(msg, run, WAIT_LIMIT)
    except concurrent.futures.TimeoutError:
        return error(f"no answer within {WAIT_LIMIT} s; the chat goes on", 504)
    except concurrent.futures.CancelledError:
        return error("the run was stopped", 409)
    except CadreError as exc:
        return jsonify({"context_id": context.id, "error": str(exc)}), 502
    return jsonify({"context_id": context.id, "response": answer})


@api.get("/chats")
def list_chats() -> Response:
    call = chats().runtime.call
    return jsonify({"chats": chats().summaries(lambda c: call(views.chat_summary, c))})


@api.get("/chats/<chat_id>")
def get_chat(chat_id: str) -> Response:
    context = chat(chat_id)

    def view() -> dict[str, Any]:
        state = views.chat_state(context)
        return {
            "chat": views.chat_summary(context),
            "agents": state["agents"],
            "usage": state["usage"],
            "variables": dict(context.variables),
            "log": views.log_items(context),
            "running": context.running,
            "pending_approvals": context.approvals.pending(),
        }

    return jsonify(chats().runtime.call(view))


@api.post("/chats/<chat_id>/approve")
def approve(chat_id: str) -> Response | tuple[Response, int]:
    """Approve or deny a command waiting for the user (setting code_exec_confirm)."""
    data = body(payloads.ApiApprove)
    chat(chat_id).approve(data.item_id, data.approved)
    return jsonify({"approved": data.approved})


@api.post("/chats/<chat_id>/stop")
def stop(chat_id: str) -> Response:
    chat(chat_id).stop()
    return jsonify({"stopped": True})
