"""The external HTTP API: other programs talk to Cadre's agents with an API key.

`X-API-Key` must match the `api_key` setting (env `CADRE_API_KEY`); an empty
setting disables the API. A message to a running chat is an intervention, as
in the UI.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request

from helpers.errors import NotFound
from server.apis import agent_calls
from server.apis.key import KeyCheck
from server.routes import approvals, branches, chat_model, my_settings, own_export, payloads, views
from server.routes import projects as project_routes
from server.routes import replay as replay_routes
from server.routes import usage as usage_routes
from server.routes import users as user_routes
from server.routes.routing import body, chat, chats, error
from server.security import identity

#: Largest JSON body the API reads.
BODY_LIMIT = 1024 * 1024
#: The status of a wait that ended without an answer (a failed run answers 502 with its error).
WAIT_STATUS = {"timeout": 504, "stopped": 409}

KEY = KeyCheck("the external API", "X-API-Key")

api = Blueprint("api", __name__, url_prefix="/api/v1")
#: /api/v1/projects...: the same routes as the Projects panel's (server/routes/projects.py).
project_routes.add_routes(api, "/projects")
#: /api/v1/users, /api/v1/keys: the accounts (server/routes/users.py).
user_routes.add_routes(api, "")
own_export.add_routes(api, "")
#: /api/v1/usage: each person's model usage (server/routes/usage.py).
usage_routes.add_routes(api, "")
#: /api/v1/my/settings: a person's own settings (server/routes/my_settings.py).
my_settings.add_routes(api, "")
#: /api/v1/presets, PATCH /api/v1/chats/<id>: a chat's model choice (server/routes/chat_model.py).
chat_model.add_routes(api, "")
#: POST /api/v1/chats/<id>/replay: a saved chat replayed (server/routes/replay.py).
replay_routes.add_routes(api, "")
#: POST /api/v1/chats/<id>/branch: a new chat from one at a log item (server/routes/branches.py).
branches.add_routes(api, "")


@api.before_request
def check_key() -> tuple[Response, int] | None:
    refused = KEY.of_request()
    if refused is not None:
        return error(refused.message, refused.status)
    if (request.content_length or 0) > BODY_LIMIT:
        return error(f"request body over {BODY_LIMIT // 1024} KB", 413)
    return None


@api.post("/message")
def message() -> Response | tuple[Response, int]:
    data = body(payloads.ApiMessage)
    started = agent_calls.start_message(chats(), data.message, data.context_id, data.profile,
                                          data.context, data.project, data.to,
                                          identity.viewer(), data.preset, data.model)  # fmt: skip
    chat_id = started.chat.id
    if not data.wait:
        return jsonify({"context_id": chat_id})
    answer = agent_calls.wait_for_answer(started, agent_calls.WAIT_LIMIT)
    if answer.outcome == "answered":
        return jsonify({"context_id": chat_id, "response": answer.text})
    if answer.outcome == "failed":
        return jsonify({"context_id": chat_id, "error": answer.error}), 502
    return error(answer.error, WAIT_STATUS[answer.outcome])


@api.get("/chats")
def list_chats() -> Response:
    call = chats().runtime.call
    rows = chats().summaries(lambda c: call(views.chat_summary, c), identity.viewer())
    return jsonify({"chats": rows})


@api.get("/chats/<chat_id>")
def get_chat(chat_id: str) -> Response:
    context = chat(chat_id)

    def view() -> dict[str, Any]:
        state = views.chat_state(context)
        return {
            "chat": views.chat_summary(context),
            "agents": state["agents"],
            "usage": state["usage"],
            "model": state["model"],
            "variables": dict(context.variables),
            "log": views.log_items(context),
            "running": context.running,
            "pending_approvals": context.approvals.pending(),
            #: Held tool calls, answered at POST /api/v1/approvals/<id>.
            "approvals": approvals.listed(context),
        }

    # A branch names its parent (`chat.parent`); a parent lists its branches.
    return jsonify({**chats().runtime.call(view), "branches": branches.branches_of(context.id)})


@api.post("/chats/<chat_id>/approve")
def approve(chat_id: str) -> Response | tuple[Response, int]:
    """Approve or deny a command waiting for the user (setting code_exec_confirm)."""
    data = body(payloads.ApiApprove)
    chat(chat_id).approve(data.item_id, data.approved)
    return jsonify({"approved": data.approved})


@api.post("/approvals/<approval_id>")
def answer_approval(approval_id: str) -> Response | tuple[Response, int]:
    """Allow or deny one held tool call; its id (`<chat id>.<item id>`) names its chat."""
    data = body(payloads.Decision)
    chat_id, item_id = approvals.split_id(approval_id)
    try:
        context = chat(chat_id)  # another's chat, or none: a 404; another node's: relayed
    except NotFound:
        return error(f"no tool call waits for an answer as {approval_id!r}", 404)
    allow = data.decision == "allow"
    try:
        held = approvals.answer(context, item_id, allow, data.reason, data.always)
    except NotFound:
        return error(f"no tool call waits for an answer as {approval_id!r}: it was answered "
                     "already, or its run stopped", 404)  # fmt: skip
    return jsonify({"id": approval_id, "decision": data.decision, "tool": held.tool,
                    "agent": held.agent})  # fmt: skip


@api.post("/chats/<chat_id>/stop")
def stop(chat_id: str) -> Response:
    chat(chat_id).stop()
    return jsonify({"stopped": True})
