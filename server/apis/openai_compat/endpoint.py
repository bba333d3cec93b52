"""The OpenAI-compatible endpoint: any chat client or SDK talks to Cadre's agents.

`POST /v1/chat/completions` hands the last user message to Agent 0 (model
`cadre`, `cadre/<profile>` for Agent 0's profile, or a model preset's name for the
chat to run on it: store/model_choice.py) and answers with a
`chat.completion`, or with server-sent `chat.completion.chunk`s when the
request streams: the agents' progress as `reasoning_content`, the answer as
`content`, the run's tokens as `usage`. `GET /v1/models` lists the models.
A conversation this endpoint answered before continues its chat
(server/apis/openai_compat/conversations.py); the chat is a chat like any other in the UI.

Outside the UI's login and CSRF guard, like /api/v1: the `api_key` setting is
the key (`Authorization: Bearer <key>` or `X-API-Key`); empty, the endpoint is
off. Every error has the OpenAI shape (server/apis/openai_compat/wire.py).
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Iterator

from flask import Blueprint, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from helpers.errors import CadreError, UserError
from profiles.catalog import AgentProfile, get_available_agents_dict
from profiles.projects import place_of
from server.apis import agent_calls
from server.apis.key import KeyCheck
from server.apis.openai_compat import wire
from server.apis.openai_compat.calls import AgentCall, find_chat, start_call
from server.apis.openai_compat.conversations import ConversationIndex, index_path
from server.routes.routing import chats, incident, status_for
from server.security import identity
from store import model_choice

log = logging.getLogger(__name__)

#: Largest request body: a client sends the whole conversation every time.
BODY_LIMIT = 4 * 1024 * 1024
#: Seconds between keep-alive comments of a quiet stream (proxies drop idle ones).
KEEP_ALIVE = 15.0
#: Seconds between looks at the progress of a stream's run.
PROGRESS_WAIT = 1.0

KEY = KeyCheck("the OpenAI-compatible endpoint", "API key (Authorization: Bearer)")
#: The OpenAI error type and code of a key refusal, by status.
KEY_ERRORS = {403: ("permission_error", "api_disabled"),
              401: ("authentication_error", "invalid_api_key")}  # fmt: skip

openai_api = Blueprint("openai_api", __name__, url_prefix="/v1")


def fail(exc: wire.OpenAIError) -> tuple[Response, int]:
    return jsonify(exc.body()), exc.status


@openai_api.before_request
def check_key() -> tuple[Response, int] | None:
    refused = KEY.of_request()
    if refused is not None:
        return fail(wire.OpenAIError(refused.status, refused.message, *KEY_ERRORS[refused.status]))
    if (request.content_length or 0) > BODY_LIMIT:
        return fail(too_large())
    # A body without a length (chunked) is read one byte past the limit, so that one over
    # it is told apart from one that fits (werkzeug stops at the limit without a word).
    request.max_content_length = BODY_LIMIT + 1
    return None


def too_large() -> wire.OpenAIError:
    return wire.OpenAIError(413, f"request body over {BODY_LIMIT // 1024 // 1024} MB",
                            "invalid_request_error", "request_too_large")  # fmt: skip


@openai_api.errorhandler(wire.OpenAIError)
def openai_error(exc: wire.OpenAIError) -> tuple[Response, int]:
    return fail(exc)


@openai_api.errorhandler(UserError)
def user_error(exc: UserError) -> tuple[Response, int]:
    """Something a person can fix (a chat being deleted takes no message): its own status."""
    return fail(wire.OpenAIError(status_for(exc), str(exc), "invalid_request_error"))


@openai_api.errorhandler(HTTPException)
def http_error(exc: HTTPException) -> tuple[Response, int]:
    if exc.code == 413:
        return fail(too_large())
    kind = "invalid_request_error" if (exc.code or 500) < 500 else "server_error"
    return fail(wire.OpenAIError(exc.code or 500, exc.description or exc.name, kind))


@openai_api.errorhandler(Exception)
def unexpected(exc: Exception) -> tuple[Response, int]:
    return fail(wire.OpenAIError(500, incident("an OpenAI-compatible request"), "server_error"))


@openai_api.route("/<path:rest>", methods=["GET", "POST"])
def unknown(rest: str) -> tuple[Response, int]:
    return fail(
        wire.OpenAIError(
            404,
            f"no endpoint /v1/{rest}: Cadre serves /v1/models and /v1/chat/completions",
            "invalid_request_error",
            "not_found",
        )
    )


@openai_api.get("/models")
def models() -> Response:
    presets = [p["name"] for p in model_choice.choices(identity.viewer())["presets"]]
    return jsonify(wire.model_list(sorted(_profiles()), presets))


#: The `metadata` key naming the project a new chat belongs to.
PROJECT_KEY = "project"


@openai_api.post("/chat/completions")
def chat_completions() -> Response | tuple[Response, int]:
    data = wire.parse_request(read_json())
    profile, preset = model_of(data.model)
    found = wire.turns(data)
    earlier, text = wire.split_last(found)
    index = conversations()
    manager = chats()
    variables = dict(data.metadata or {})
    # metadata.project: the project of a new chat (not a context variable); a conversation
    # found in another project goes on in a new chat of the one asked for.
    project = variables.pop(PROJECT_KEY, None) or None
    viewer = identity.viewer()
    key = wire.conversation_key(data.model, earlier, viewer)
    context = find_chat(manager, index.find(key), viewer)
    if context is not None and context.project != project:
        context = None
    call = start_call(manager, context, profile, earlier, text, variables, project, viewer,
                      preset)  # fmt: skip
    answered = Answered(index, data.model, found, viewer)
    ident = wire.new_id()
    if data.stream:
        include_usage = bool(data.stream_options and data.stream_options.include_usage)
        stream = streamed(call, ident, data.model, include_usage, answered)
        return Response(
            stream,
            mimetype="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    try:
        answer = wait_answer(call)
        reasoning = call.feed.settled(everything=True)
        answered.record(call, answer)
        return jsonify(wire.completion(ident, data.model, answer, reasoning, call.usage()))
    finally:
        call.close()


def read_json() -> object:
    """The request's body as JSON, whatever its content type says (a 400 saying why not)."""
    raw = request.get_data(cache=False)
    if len(raw) > BODY_LIMIT:  # a chunked body (a declared length over it: check_key's 413)
        raise too_large()
    try:
        return current_app.json.loads(raw)
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise wire.bad_request(f"the body is not UTF-8: {bad!r} at byte {exc.start}") from None
    except ValueError as exc:
        raise wire.bad_request(f"the body is not valid JSON: {exc}") from None


def _profiles() -> dict[str, AgentProfile]:
    """The profiles the key's owner may ask for: the shared ones and their own."""
    return get_available_agents_dict(place_of(None, identity.space()))


def model_of(model: str) -> tuple[str | None, str]:
    """The profile (None: Agent 0's default) and the model preset ("": the settings'
    models) a model name asks for; 404 for an unknown one, naming the presets."""
    if model == wire.MODEL:
        return None, ""
    prefix = f"{wire.MODEL}/"
    name = model[len(prefix) :] if model.startswith(prefix) else ""
    if name and name in _profiles():
        return name, ""
    if not name:
        try:  # a preset's name (store/model_choice.py); never "cadre", so never a profile's
            return None, model_choice.checked(model, identity.viewer())
        except UserError:
            pass
    presets = [p["name"] for p in model_choice.choices(identity.viewer())["presets"]]
    also = f", or a model preset ({', '.join(presets)})" if presets else ""
    raise wire.OpenAIError(
        404, f"no model {model!r}: use {wire.MODEL!r} or '{wire.MODEL}/<profile>'{also} "
        "(GET /v1/models lists them)", "invalid_request_error", "model_not_found", "model",
    )  # fmt: skip


def conversations() -> ConversationIndex:
    index: ConversationIndex = current_app.extensions.setdefault(
        "cadre.openai_conversations", ConversationIndex(index_path())
    )
    return index


class Answered:
    """Records an answered conversation, so that its next message continues the chat."""

    def __init__(self, index: ConversationIndex, model: str, found: list[wire.Turn],
                 owner: str | None) -> None:  # fmt: skip
        self.index, self.model, self.found, self.owner = index, model, found, owner

    def record(self, call: AgentCall, answer: str) -> None:
        after = [*self.found, wire.Turn("assistant", answer.replace("\r\n", "\n").strip())]
        self.index.remember(wire.conversation_key(self.model, after, self.owner), call.chat.id)


def wait_answer(call: AgentCall, timeout: float | None = None) -> str:
    """Agent 0's answer, or the OpenAIError that says why there is none."""
    try:
        return call.answer(max(agent_calls.WAIT_LIMIT if timeout is None else timeout, 0.0))
    except concurrent.futures.TimeoutError:
        raise wire.OpenAIError(
            504,
            f"no answer within {agent_calls.WAIT_LIMIT:.0f} s; the chat {call.chat.id} goes on",
            "server_error",
            "timeout",
        ) from None
    except concurrent.futures.CancelledError:
        raise wire.OpenAIError(409, "the run was stopped before it answered", "server_error",
                               "run_stopped") from None  # fmt: skip
    except CadreError as exc:
        raise wire.OpenAIError(502, f"the agents could not answer: {exc}", "server_error",
                               "run_failed") from None  # fmt: skip


def streamed(call: AgentCall, ident: str, model: str, include_usage: bool,
             answered: Answered) -> Iterator[str]:  # fmt: skip
    """The stream's events: progress as it settles, then the answer, usage and [DONE].

    A client that goes away ends the stream, not the run: the chat goes on."""
    try:
        yield wire.sse(wire.chunk(ident, model, {"role": "assistant", "content": ""}))
        deadline = time.monotonic() + agent_calls.WAIT_LIMIT
        quiet_since = time.monotonic()
        ended = False
        while not ended and time.monotonic() < deadline:
            ended = call.feed.wait(PROGRESS_WAIT)
            progress = call.feed.settled(everything=ended)
            if progress:
                quiet_since = time.monotonic()
                yield wire.sse(wire.chunk(ident, model, {"reasoning_content": progress}))
            elif time.monotonic() - quiet_since > KEEP_ALIVE:
                quiet_since = time.monotonic()
                yield ": keep-alive\n\n"
        try:
            answer = wait_answer(call, deadline - time.monotonic())
        except wire.OpenAIError as exc:
            yield wire.sse(exc.body())
            yield wire.sse("[DONE]")
            return
        answered.record(call, answer)
        usage = call.usage()
        yield wire.sse(wire.chunk(ident, model, {"content": answer}))
        yield wire.sse(wire.chunk(ident, model, {}, "stop", usage))
        if include_usage:
            yield wire.sse(wire.chunk(ident, model, {}, usage=usage))
        yield wire.sse("[DONE]")
    finally:
        call.close()
