"""Validated shapes of what browsers and API clients send."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.prompt import chat_variables
from helpers.errors import UserError

#: Longest message accepted from a browser or the API (characters).
MESSAGE_LIMIT = 200_000


class Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)


class ChatRef(Payload):
    chat_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")


class Subscribe(ChatRef):
    since: int = Field(default=0, ge=0)
    guid: str = ""


#: An agent's name as the tree shows it ("A0", "A1.2"), or "" for none.
AGENT_NAME = r"^(A\d+(\.\d+)*)?$"


class Send(ChatRef):
    message: str = Field(min_length=1, max_length=MESSAGE_LIMIT)
    attachments: list[str] = Field(default_factory=list, max_length=50)
    broadcast: Literal[1, -1] = 1
    #: While the chat works: the agent the message goes to (one selected in the tree,
    #: "A1.2"); "" for every working agent.
    to: str = Field(default="", max_length=32, pattern=AGENT_NAME)


#: Longest reason a person gives for denying a tool call (the agent reads it).
REASON_LIMIT = 2_000


class Approve(ChatRef):
    item_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    approved: bool
    #: Why not (a denial): the agent reads it.
    reason: str = Field(default="", max_length=REASON_LIMIT)
    #: An allow for this call only (""), the rest of the chat, or saved as a rule.
    always: Literal["", "chat", "rule"] = ""


class Decision(Payload):
    """`POST /api/v1/approvals/<id>`: the answer to one held tool call."""

    decision: Literal["allow", "deny"]
    reason: str = Field(default="", max_length=REASON_LIMIT)
    always: Literal["", "chat", "rule"] = ""


class ApiApprove(Payload):
    item_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    approved: bool


class NewChat(Payload):
    #: The project the chat belongs to (none: no project).
    project: str | None = Field(default=None, max_length=64)


class Rename(ChatRef):
    name: str = Field(max_length=500)


class MarkRead(Payload):
    """Notifications to mark read: these ids, or every one (`ids` left out or null)."""

    ids: list[Annotated[str, Field(max_length=64)]] | None = Field(default=None, max_length=1000)


class ApiMessage(Payload):
    message: str = Field(min_length=1, max_length=MESSAGE_LIMIT)
    context_id: str | None = Field(default=None, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    profile: str | None = Field(default=None, max_length=64)
    #: The project a new chat belongs to (with `context_id`: the chat must be in it).
    project: str | None = Field(default=None, max_length=64)
    wait: bool = True
    #: Context variables to set on the chat before the message (null removes one).
    context: dict[str, str | None] | None = None
    #: While the chat works: the agent the message goes to ("A1.2"), as the page's
    #: selection in the tree; "" (or an agent not working) for every working agent.
    to: str = Field(default="", max_length=32, pattern=AGENT_NAME)
    #: A model preset by name (Settings › Model presets): the chat runs on it from this
    #: message on, as the header's picker would set it; absent: the chat's choice stays.
    preset: str | None = Field(default=None, max_length=64)
    #: Or a configured chat model by name (the settings' chat model, a fallback, a
    #: preset's chat model), as the picker's Models group sets it.
    model: str | None = Field(default=None, max_length=200)

    @field_validator("context", mode="before")
    @classmethod
    def _variables(cls, value: object) -> object:
        return None if value is None else variables_change(value)


def variables_change(value: object, *, removals: bool = True) -> dict[str, str | None]:
    """A change of a chat's context variables as sent, checked (core/prompt/chat_variables.py);
    ValueError in the same words, for a payload's validator."""
    try:
        return chat_variables.check_change(value, removals=removals)
    except UserError as exc:
        raise ValueError(str(exc)) from None


def problem(exc: ValidationError) -> str:
    """The first problem of a payload, as a person reads it: 'message: Field required'."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "payload"
    # A validator's own words, without pydantic's "Value error, " before them.
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"
