"""Agent Zero's External API, `POST /api_message`, so its clients work unchanged.

The body is Agent Zero's: `message`, `context_id` (empty: a new chat),
`agent_profile` and `project_name` (a new chat's Agent 0 profile and project;
an existing chat keeps its own, and a different one is refused), base64
`attachments` (`[{"filename", "base64"}]`, saved in the chat's folder as the
page's uploads are) and `lifetime_hours`. The answer is Agent Zero's shape,
`{"context_id", "response"}`, or `{"error"}` with a status. The key is the
`api_key` setting, sent as `X-API-KEY` (or a Bearer token): the one rule of
every outside caller (server/apis/key.py); like /api/v1, no login or CSRF token.

`lifetime_hours` is accepted and not applied: Agent Zero forgets an API chat
after that many hours, Cadre keeps it like any other chat until it is
deleted. A field Agent Zero does not define is ignored with a warning in the
server log (its name only: a client may put a secret in it).
"""

from __future__ import annotations

import base64
import binascii
import logging
from typing import TYPE_CHECKING

from flask import Blueprint, Response, jsonify, request
from pydantic import Field, ValidationError

from core.agent_types import UserMessage
from helpers.errors import UserError
from server.apis import agent_calls
from server.apis.key import KeyCheck
from server.routes.attachments import attach
from server.routes.payloads import MESSAGE_LIMIT, Payload, problem
from server.routes.routing import chats, error
from server.routes.upload_limits import upload_cap
from server.security import identity

if TYPE_CHECKING:
    from core.chat import Chat

log = logging.getLogger(__name__)

PATH = "/api_message"
#: The status of a wait that ended without an answer.
NO_ANSWER_STATUS = {"timeout": 504, "stopped": 409, "failed": 500}
ATTACHMENTS_LIMIT = 20

KEY = KeyCheck("the external API", "X-API-KEY")

agent_zero_api = Blueprint("agent_zero_api", __name__)


class Attachment(Payload):
    filename: str = Field(min_length=1, max_length=255)
    content: str = Field(alias="base64")


class AgentZeroMessage(Payload):
    """The body of Agent Zero's `/api_message`."""

    message: str = Field(min_length=1, max_length=MESSAGE_LIMIT)
    context_id: str | None = Field(default=None, max_length=64, pattern=r"^[A-Za-z0-9_-]*$")
    agent_profile: str | None = Field(default=None, max_length=64)
    project_name: str | None = Field(default=None, max_length=64)
    attachments: list[Attachment] = Field(default_factory=list, max_length=ATTACHMENTS_LIMIT)
    lifetime_hours: float = Field(default=24, ge=0)


KNOWN_FIELDS = frozenset(f.alias or name for name, f in AgentZeroMessage.model_fields.items())


@agent_zero_api.post(PATH)
def api_message() -> Response | tuple[Response, int]:
    """Agent Zero's message call: checked whole before a chat is made or a file saved."""
    refused = KEY.of_request()
    if refused is not None:
        return error(refused.message, refused.status)
    data = _body()
    files = [(a.filename, _decoded(i, a)) for i, a in enumerate(data.attachments)]
    if too_big := upload_cap().refusal(sum(len(raw) for _, raw in files)):
        return error(too_big, 413)  # the limit an admin set on the key's owner
    context = _chat(data)
    msg = UserMessage(data.message, attachments=attach(context.id, files))
    started = agent_calls.send(chats(), context, msg)
    answer = agent_calls.wait_for_answer(started, agent_calls.WAIT_LIMIT)
    if answer.outcome == "answered":
        return jsonify({"context_id": context.id, "response": answer.text})
    return error(answer.error, NO_ANSWER_STATUS[answer.outcome])


def _body() -> AgentZeroMessage:
    """The checked body; fields Agent Zero does not define are named in the log."""
    raw = request.get_json(silent=True)
    if not isinstance(raw, dict):
        raise UserError("send a JSON object with at least 'message'")
    # Quoted (repr): a name is the client's text and must not forge a line of the log.
    unknown = sorted(repr(str(name)[:40]) for name in raw if name not in KNOWN_FIELDS)
    if unknown:
        log.warning("%s: ignored field(s) it does not define: %s", PATH, ", ".join(unknown[:20]))
    try:
        return AgentZeroMessage.model_validate(raw)
    except ValidationError as exc:
        raise UserError(problem(exc)) from None


def _decoded(index: int, attachment: Attachment) -> bytes:
    try:
        return base64.b64decode(attachment.content, validate=True)
    except (binascii.Error, ValueError):
        named = f"attachments.{index} ({attachment.filename!r})"
        raise UserError(f"{named}: not valid base64") from None


def _chat(data: AgentZeroMessage) -> Chat:
    """The chat the message goes to: the given one (which keeps its profile and project),
    or a new one with the profile and project asked for."""
    if data.context_id:
        context = chats().get(data.context_id, identity.viewer())
        profile = context.agent0.ctx.profile
        if data.agent_profile and data.agent_profile != profile:
            raise UserError(f"chat {context.id} talks with profile {profile!r}: agent_profile "
                            "applies only to a new chat")  # fmt: skip
        if data.project_name and data.project_name != context.project:
            raise UserError(f"chat {context.id} is not in project {data.project_name!r}: "
                            "project_name applies only to a new chat")  # fmt: skip
        return context
    return agent_calls.new_chat_to_run(chats(), data.agent_profile or None,
                                       data.project_name or None, identity.viewer())  # fmt: skip
