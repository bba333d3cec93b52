"""The OpenAI chat-completions wire: what clients send, what they get back.

Requests are validated into typed models here (a bad body is a 400 saying
where); replies are built here, in one place: a `chat.completion`, the
`chat.completion.chunk`s of a stream, the model list and the error shape
`{"error": {"message", "type", "param", "code"}}` every OpenAI client reads.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from server.routes.payloads import MESSAGE_LIMIT, variables_change

#: The model name that means Agent 0 with the default profile; `cadre/<profile>` picks one.
MODEL = "cadre"
#: Roles a client may send; "developer" is the newer name of "system".
Role = Literal["system", "developer", "user", "assistant", "tool", "function"]


class OpenAIError(Exception):
    """A request that fails with an OpenAI-shaped error and `status`."""

    def __init__(self, status: int, message: str, kind: str, code: str | None = None,
                 param: str | None = None) -> None:  # fmt: skip
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        return {"error": {"message": str(self), "type": self.kind, "param": self.param,
                          "code": self.code}}  # fmt: skip


def bad_request(message: str, param: str | None = None) -> OpenAIError:
    return OpenAIError(400, message, "invalid_request_error", "invalid_request", param)


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ContentPart(_Wire):
    type: str
    text: str | None = None


class Message(_Wire):
    role: Role
    content: str | list[ContentPart] | None = None


class StreamOptions(_Wire):
    include_usage: bool = False


class CompletionRequest(_Wire):
    model: str = Field(min_length=1, max_length=200)
    messages: list[Message] = Field(min_length=1, max_length=10_000)
    stream: bool = False
    stream_options: StreamOptions | None = None
    #: Set as the chat's context variables (texts only, as OpenAI's `metadata` is).
    metadata: dict[str, str] | None = None

    @field_validator("metadata", mode="before")
    @classmethod
    def _variables(cls, value: object) -> object:
        return None if value is None else variables_change(value, removals=False)


@dataclass(frozen=True)
class Turn:
    """One message as Cadre reads it: its role (normalised) and its text."""

    role: str
    text: str


def parse_request(data: Any) -> CompletionRequest:
    """The body as a `CompletionRequest`; an OpenAIError (400) naming the field otherwise."""
    if not isinstance(data, dict):
        raise bad_request("the body must be a JSON object")
    try:
        return CompletionRequest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        words = first["msg"].removeprefix("Value error, ")  # a validator's own words
        raise bad_request(f"{where or 'body'}: {words}", where) from None


def turns(request: CompletionRequest) -> list[Turn]:
    """Every message as role and text; text parts are joined, other parts refused."""
    found = []
    for at, message in enumerate(request.messages):
        param = f"messages.{at}.content"
        content = message.content
        if content is None:
            text = ""
        elif isinstance(content, str):
            text = content
        else:
            kinds = {part.type for part in content} - {"text"}
            if kinds:
                raise bad_request(f"{param}: only text parts are supported, not {sorted(kinds)}",
                                  param)  # fmt: skip
            text = "\n".join(part.text or "" for part in content)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise bad_request(f"{param}: the text is not valid Unicode (a lone surrogate)",
                              param) from None  # fmt: skip
        role = "system" if message.role == "developer" else message.role
        found.append(Turn(role, text.replace("\r\n", "\n").strip()))
    return found


def split_last(found: list[Turn]) -> tuple[list[Turn], str]:
    """The conversation so far and the last user message (a 400 if the last is not one)."""
    if not any(turn.role == "user" for turn in found):
        raise bad_request("messages: there is no user message", "messages")
    last = found[-1]
    if last.role != "user":
        raise bad_request("messages: the last message must be the user's", "messages")
    if not last.text:
        raise bad_request(f"messages.{len(found) - 1}.content: the message is empty", "messages")
    if len(last.text) > MESSAGE_LIMIT:
        raise bad_request(f"messages.{len(found) - 1}.content: longer than {MESSAGE_LIMIT:,} "
                          "characters", "messages")  # fmt: skip
    return found[:-1], last.text


def conversation_key(model: str, found: list[Turn], owner: str | None = None) -> str:
    """The key of `owner`'s conversation (its model and messages) in the continuation
    index: the same messages from two users are two conversations."""
    parts: list[object] = [model, [[t.role, t.text] for t in found]]
    data = json.dumps(parts if owner is None else [*parts, owner], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


# -- replies ------------------------------------------------------------------


def new_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def usage_block(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}  # fmt: skip


def completion(ident: str, model: str, answer: str, reasoning: str,
               usage: dict[str, int]) -> dict[str, Any]:  # fmt: skip
    """A whole `chat.completion`."""
    message: dict[str, Any] = {"role": "assistant", "content": answer}
    if reasoning:
        message["reasoning_content"] = reasoning
    return {
        "id": ident, "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage,
    }  # fmt: skip


def chunk(ident: str, model: str, delta: dict[str, Any], finish: str | None = None,
          usage: dict[str, int] | None = None) -> dict[str, Any]:  # fmt: skip
    """One `chat.completion.chunk` with `delta` (no choice when `delta` is empty: usage)."""
    choices = [{"index": 0, "delta": delta, "finish_reason": finish}] if delta or finish else []
    body: dict[str, Any] = {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
    }
    if usage is not None:
        body["usage"] = usage
    return body


def sse(data: dict[str, Any] | str) -> str:
    """One server-sent event (JSON in ASCII: no text can fail to encode mid-stream)."""
    text = data if isinstance(data, str) else json.dumps(data)
    return f"data: {text}\n\n"


def model_list(profiles: list[str], presets: Sequence[str] = ()) -> dict[str, Any]:
    """`cadre`, `cadre/<profile>` for each profile, and each model preset by its name."""
    names = [MODEL, *(f"{MODEL}/{name}" for name in profiles), *presets]
    return {"object": "list", "data": [{"id": name, "object": "model", "created": 0,
                                        "owned_by": "cadre"} for name in names]}  # fmt: skip
