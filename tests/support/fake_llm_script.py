"""What the fake model server answers with: scripted replies and failures, rule
predicates, and the helpers that shape its JSON (see fake_llm.py)."""

from __future__ import annotations

import hashlib
import json
import math
import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NO_SCRIPT_MESSAGE = "fake_llm: no scripted reply for this request"
REFUSED_MESSAGE = "fake_llm: refused a request of a test that has ended"
DEFAULT_MODEL = "fake-model"
CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
MODELS_PATH = "/v1/models"
#: Where Ollama lists its models (served from the base without /v1).
OLLAMA_TAGS_PATH = "/api/tags"

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    429: "rate_limit_error",
}
_ERROR_CODES = {429: "rate_limit_exceeded", 401: "invalid_api_key", 404: "model_not_found"}


# --------------------------------------------------------------------------- scripted items


@dataclass(frozen=True)
class Reply:
    """A successful chat completion, streamed or not depending on the request.

    ``text`` is split into pieces of ``chunk_size`` characters; pass a sequence of
    strings instead to choose the stream's pieces exactly. ``reasoning`` is sent first
    as ``reasoning_content`` deltas (split the same way). ``usage`` is
    ``(prompt_tokens, completion_tokens)``; when ``None`` it is
    ``(estimate_prompt_tokens(messages), len(text) // 4 + 1)``. ``first_delay`` waits
    before the first chunk, ``delay`` between chunks (a slow stream). ``gate``, when
    given, holds the reply until the test sets it (at most 30 s): a way to know that
    several requests are in flight at once without timing anything. ``holds`` holds a
    stream part-way: content piece ``i`` is sent once ``holds[i]`` is set (at most 30 s),
    so a test acts while the reply is being written, at the point it chose.
    """

    text: str | Sequence[str] = ""
    chunk_size: int = 8
    reasoning: str = ""
    usage: tuple[int, int] | None = None
    delay: float = 0.0
    first_delay: float = 0.0
    finish_reason: str = "stop"
    gate: threading.Event | None = field(default=None, compare=False)
    holds: Mapping[int, threading.Event] = field(default_factory=dict, compare=False)
    #: When given, the wall-clock time each content chunk left the server is appended
    #: (benchmarks measure how long a chunk takes to reach the page).
    sent_at: list[float] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")

    @property
    def full_text(self) -> str:
        """The whole reply text, however it is chunked."""
        return self.text if isinstance(self.text, str) else "".join(self.text)

    def content_pieces(self) -> list[str]:
        """The content deltas this reply streams, in order."""
        if isinstance(self.text, str):
            return _split(self.text, self.chunk_size)
        return list(self.text)

    def reasoning_pieces(self) -> list[str]:
        """The reasoning deltas this reply streams, in order."""
        return _split(self.reasoning, self.chunk_size)


@dataclass(frozen=True)
class Fail:
    """Answer ``times`` requests with HTTP ``status`` and an OpenAI-style error body.

    429 gets the type ``rate_limit_error`` and the headers ``retry-after: 0`` and
    ``retry-after-ms: 1`` (so an SDK retry, if enabled, does not sleep). In the queue
    the item is consumed after ``times`` answers; as a rule's item ``times`` is ignored
    (the rule's own ``times`` counts).
    """

    status: int = 500
    message: str = "fake_llm: scripted failure"
    times: int = 1

    def __post_init__(self) -> None:
        if self.times < 1:
            raise ValueError("times must be at least 1")

    @property
    def error_type(self) -> str:
        """The OpenAI error ``type`` for this status."""
        return _ERROR_TYPES.get(self.status, "server_error" if self.status >= 500 else "error")


@dataclass(frozen=True)
class CutStream:
    """Start a 200 stream, send ``text`` as chunks, then drop the connection abruptly.

    No ``finish_reason``, no ``[DONE]`` and no final chunk of the chunked encoding are
    sent, so the client sees a truncated body.
    """

    text: str = ""
    chunk_size: int = 8

    def content_pieces(self) -> list[str]:
        """The content deltas sent before the cut."""
        return _split(self.text, self.chunk_size)


@dataclass(frozen=True)
class Hang:
    """Accept the request and send nothing for ``seconds``, then close the connection.

    For timeout tests: give the client call a shorter ``timeout``. Stopping the server
    ends the wait early.
    """

    seconds: float = 30.0


#: What an `Endless` stream writes first: a reply whose `text` string never closes.
ENDLESS_HEAD = (
    '{"thoughts": ["I will write it all out."], "headline": "Writing without end",'
    ' "tool_name": "response", "tool_args": {"text": "'
)


@dataclass
class EndlessStats:
    """What the server saw of the streams of one :class:`Endless` item (thread-safe)."""

    #: Streams begun (requests answered with this item).
    begun: int = 0
    #: Streams the client ended by closing the connection.
    client_closed: int = 0
    #: Streams the server ended itself, after ``max_seconds``.
    gave_up: int = 0
    #: Filler characters sent, over all streams.
    chars_sent: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: int) -> None:
        with self.lock:
            for name, count in counts.items():
                setattr(self, name, getattr(self, name) + count)

    @property
    def open_streams(self) -> int:
        """Streams still going on."""
        with self.lock:
            return self.begun - self.client_closed - self.gave_up


@dataclass(frozen=True)
class Endless:
    """A stream that never ends: ``head``, then ``chunk_size`` characters of filler per
    chunk, forever, inside a JSON string that never closes, until the client closes
    the connection (a model that rambles on without end).

    ``delay`` waits between chunks (0: as fast as the socket takes them).
    ``first_delay`` waits before the first filler chunk. ``stall_after``: after that
    many filler chunks nothing more is sent, but the connection stays open (a stalled
    stream). After ``max_seconds`` the server gives up and drops the connection, so a
    failing test never leaves a stream running. ``stats`` counts what the server saw:
    streams begun, ended by the client, filler sent. As a rule's item it answers every
    matching request, each with a stream of its own.
    """

    chunk_size: int = 65_536
    delay: float = 0.0
    first_delay: float = 0.0
    stall_after: int | None = None
    head: str = ENDLESS_HEAD
    max_seconds: float = 60.0
    stats: EndlessStats = field(default_factory=EndlessStats, compare=False)

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")

    def fillers(self) -> tuple[str, str]:
        """Two chunks of filler, sent in turn: words and spaces, nothing that could end
        the string. Two, because litellm ends a stream that repeats one chunk 100 times."""
        return tuple(  # type: ignore[return-value]
            (words * (self.chunk_size // len(words) + 1))[: self.chunk_size]
            for words in ("and so on ", "and so forth ")
        )


ScriptItem = Reply | Fail | CutStream | Hang | Endless
Predicate = Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, in arrival order.

    ``body`` is the parsed JSON body (``{}`` for a GET or an unparsable body),
    ``headers`` have lower-cased names, ``time`` is a ``time.monotonic()`` value.
    """

    method: str
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    time: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat ``messages`` of the request (empty for other endpoints)."""
        return list(self.body.get("messages") or [])

    @property
    def text(self) -> str:
        """The contents of its messages, one after another (what a test searches for words)."""
        return "\n".join(str(m["content"]) for m in self.messages)


@dataclass(eq=False)  # identity, so remove_rule removes this very rule
class Rule:
    """A predicate on the request body and the item to answer with when it matches.

    ``times=None`` means the rule is permanent; otherwise it is removed after that many
    matches (``times=1`` is a one-shot rule). ``hits`` counts the matches so far.
    """

    predicate: Predicate
    item: ScriptItem
    times: int | None = None
    hits: int = 0

    @property
    def exhausted(self) -> bool:
        """Whether a limited rule has answered as often as it may."""
        return self.times is not None and self.hits >= self.times


@dataclass
class _QueueSlot:
    item: ScriptItem
    remaining: int = 1


def model_is(name: str) -> Predicate:
    """A rule predicate matching requests for the model ``name`` (as sent on the wire).

    litellm strips its provider prefix, so ``model="openai/util"`` arrives as ``"util"``.
    """
    return lambda body: body.get("model") == name


def last_user_contains(fragment: str) -> Predicate:
    """A rule predicate matching chat requests whose last user message contains ``fragment``."""

    def predicate(body: dict[str, Any]) -> bool:
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        return bool(users) and fragment in _content_text(users[-1].get("content"))

    return predicate


# --------------------------------------------------------------------------- pure helpers


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _content_text(content: Any) -> str:
    """The text of a message ``content``: a string or a list of typed parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def estimate_prompt_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """The default ``prompt_tokens``: total characters of the message texts // 4."""
    return sum(len(_content_text(m.get("content"))) for m in messages) // 4


def fake_embedding(text: str, dim: int = 8) -> list[float]:
    """The unit vector the server returns for ``text``: deterministic, from SHA-256."""
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        for (word,) in struct.iter_unpack(">I", digest):
            values.append(word / 0xFFFFFFFF * 2.0 - 1.0)
        counter += 1
    vector = values[:dim]
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def _embedding_inputs(raw: Any) -> list[str]:
    """Normalise the ``input`` of an embeddings request (text, texts or token lists)."""
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and raw and all(isinstance(x, int) for x in raw):
        return [json.dumps(raw)]
    if isinstance(raw, list):
        return [x if isinstance(x, str) else json.dumps(x) for x in raw]
    return [json.dumps(raw)]


def error_body(status: int, message: str) -> dict[str, Any]:
    """An OpenAI-style error body for ``status``."""
    fail = Fail(status=status, message=message)
    return {
        "error": {
            "message": message,
            "type": fail.error_type,
            "param": None,
            "code": _ERROR_CODES.get(status),
        }
    }


# --------------------------------------------------------------------------- the server
