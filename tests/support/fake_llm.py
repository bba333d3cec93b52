"""A scripted, OpenAI-compatible HTTP server that tests run the real litellm client against.

Tests fake the wire, not our functions (CONVENTIONS.md row 9): the server speaks the
OpenAI chat-completions protocol over real HTTP on 127.0.0.1, and every reply it gives
was scripted by the test. Nothing is derived from the request (never from
``len(messages)``), so a test that sends one prompt more than it planned fails loudly
with "fake_llm: no scripted reply for this request" instead of passing by accident.

Usage::

    with FakeLLMServer() as server:
        server.script(Reply("Hello"), Fail(429), Reply('{"tool": "x"}'))
        server.add_rule(model_is("util"), Reply("summary"))  # permanent rule
        response = await litellm.acompletion(
            model="openai/main", api_base=server.base_url, api_key="test",
            messages=[...], stream=True, stream_options={"include_usage": True},
            num_retries=0, max_retries=0,
        )
        ...
        assert server.chat_requests()[-1].body["messages"][-1]["content"] == "..."
        assert server.pending() == 0

Endpoints: ``POST /v1/chat/completions`` (streamed as Server-Sent Events over chunked
transfer encoding, or a plain JSON body), ``POST /v1/embeddings`` (deterministic unit
vectors from a hash of each input, see :func:`fake_embedding`) and ``GET /v1/models``.

Which reply a chat request gets: the first rule (in the order added) whose predicate
accepts the parsed JSON body, else the head of the FIFO queue, else an HTTP 500 whose
message starts with "fake_llm: no scripted reply for this request". Rules and the queue
serve chat completions only; embeddings and models are always answered.

Facts about litellm (1.110, OpenAI SDK 3.x) against this server, checked by
``tests/integration/test_fake_llm_wire.py``:

* Set ``LITELLM_LOCAL_MODEL_COST_MAP=True`` before importing litellm, otherwise the
  import fetches the model cost map from GitHub. ``litellm.suppress_debug_info = True``
  silences the "Give Feedback / Get Help" banner printed on every error. No other
  network traffic was seen (litellm 1.110 has no ``telemetry`` switch any more).
* Retries: the OpenAI SDK under litellm retries 429, 5xx and connection errors twice
  by default (3 requests per call). Pass ``max_retries=0`` (forwarded to the SDK) or
  ``num_retries=0`` (litellm copies it into the SDK's ``max_retries``, and it also keeps
  litellm's own retry wrapper off) to get exactly one request per call; passing both is
  clearest. The global ``litellm.num_retries = 0`` does NOT stop the SDK's retries.
  The SDK waits ``retry-after-ms`` / ``retry-after`` when positive, else backs off
  0.5 s, 1 s, ...; this server sends ``retry-after-ms: 1`` with 429s.
* Errors (all subclass ``openai.APIError``, which is the common base to catch, not
  ``litellm.APIError``; all carry ``status_code``): 429 ->
  ``litellm.RateLimitError``; 500 -> ``litellm.InternalServerError``; 503 ->
  ``litellm.ServiceUnavailableError``; 400 -> ``litellm.BadRequestError``; 401 ->
  ``litellm.AuthenticationError``. A client timeout (``timeout=`` on the call, with
  :class:`Hang` or a slow :class:`Reply`) raises ``litellm.Timeout``, also mid-stream.
* A stream cut mid-way (:class:`CutStream`) raises ``MidStreamFallbackError`` (import it
  from ``litellm.exceptions``; the top-level ``litellm`` does not export it), a subclass
  of ``litellm.ServiceUnavailableError`` with ``status_code`` 503, from the
  ``async for`` loop once the chunks that did arrive were yielded. Its
  ``original_exception`` is a ``litellm.APIConnectionError`` and its
  ``generated_content`` the text received before the cut. Same with the default
  aiohttp transport and with ``litellm.disable_aiohttp_transport = True`` set before
  the first call.
* Reasoning text arrives as ``chunk.choices[0].delta.reasoning_content`` (stream) and
  ``response.choices[0].message.reasoning_content`` (non-stream).
* With ``stream_options={"include_usage": True}`` the last chunk litellm yields has
  empty ``choices`` and ``chunk.usage`` set; without it chunks have no ``usage``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

logger = logging.getLogger(__name__)

NO_SCRIPT_MESSAGE = "fake_llm: no scripted reply for this request"
DEFAULT_MODEL = "fake-model"
CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
MODELS_PATH = "/v1/models"

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
    several requests are in flight at once without timing anything.
    """

    text: str | Sequence[str] = ""
    chunk_size: int = 8
    reasoning: str = ""
    usage: tuple[int, int] | None = None
    delay: float = 0.0
    first_delay: float = 0.0
    finish_reason: str = "stop"
    gate: threading.Event | None = field(default=None, compare=False)
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


ScriptItem = Reply | Fail | CutStream | Hang
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


class FakeLLMServer:
    """A scripted OpenAI-compatible server on 127.0.0.1, run in a background thread.

    Use as a context manager or call :meth:`start` / :meth:`stop`. All public methods
    are thread-safe.
    """

    def __init__(self, *, models: Sequence[str] = (DEFAULT_MODEL,), embedding_dim: int = 8) -> None:
        self.models = list(models) or [DEFAULT_MODEL]
        self.embedding_dim = embedding_dim
        self._lock = threading.Lock()
        self._queue: deque[_QueueSlot] = deque()
        self._rules: list[Rule] = []
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = 0

    # lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-llm-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, end waits (delays, :class:`Hang`) and close open connections."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.close_all_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError("fake_llm: server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``api_base`` for clients: ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # scripting ------------------------------------------------------------------------

    def script(self, *items: ScriptItem) -> None:
        """Append items to the FIFO queue of replies."""
        with self._lock:
            for item in items:
                remaining = item.times if isinstance(item, Fail) else 1
                self._queue.append(_QueueSlot(item, remaining))

    def add_rule(self, predicate: Predicate, item: ScriptItem, *, times: int | None = None) -> Rule:
        """Answer requests whose body matches ``predicate`` with ``item``, before the queue.

        ``times=None`` keeps the rule forever; ``times=n`` removes it after n matches.
        Rules are checked in the order they were added. Returns the rule (see
        :meth:`remove_rule`).
        """
        if times is not None and times < 1:
            raise ValueError("times must be None or at least 1")
        rule = Rule(predicate, item, times)
        with self._lock:
            self._rules.append(rule)
        return rule

    def remove_rule(self, rule: Rule) -> None:
        """Remove a rule added by :meth:`add_rule` (no error if already gone)."""
        with self._lock:
            if rule in self._rules:
                self._rules.remove(rule)

    def pending(self) -> int:
        """How many scripted items are not used up.

        Counts the queued items (a partly used ``Fail`` counts once) and the rules added
        with a ``times`` limit that have not reached it; permanent rules never count.
        """
        with self._lock:
            return len(self._queue) + sum(1 for r in self._rules if r.times is not None)

    def reset(self) -> None:
        """Clear the queue, the rules and the recorded requests."""
        with self._lock:
            self._queue.clear()
            self._rules.clear()
            self._requests.clear()

    # records --------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded ``POST /v1/chat/completions`` requests."""
        return [r for r in self.requests if r.path == CHAT_PATH]

    def embedding_requests(self) -> list[RecordedRequest]:
        """The recorded ``POST /v1/embeddings`` requests."""
        return [r for r in self.requests if r.path == EMBEDDINGS_PATH]

    # used by the handler --------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_item(self, body: dict[str, Any]) -> ScriptItem | None:
        with self._lock:
            for rule in self._rules:
                if _safe_match(rule.predicate, body):
                    rule.hits += 1
                    if rule.exhausted:
                        self._rules.remove(rule)
                    return rule.item
            if not self._queue:
                return None
            slot = self._queue[0]
            slot.remaining -= 1
            if slot.remaining <= 0:
                self._queue.popleft()
            return slot.item

    def _next_id(self) -> str:
        with self._lock:
            self._ids += 1
            return f"chatcmpl-fake-{self._ids}"

    def _hold(self, reply: Reply) -> None:
        """Before a reply's first chunk: its gate, then its first delay."""
        if reply.gate is not None:
            reply.gate.wait(30)
        self._wait(reply.first_delay)

    def _wait(self, seconds: float) -> None:
        """Sleep, but return early when the server stops."""
        if seconds > 0:
            self._stopping.wait(seconds)


def _safe_match(predicate: Predicate, body: dict[str, Any]) -> bool:
    """Run a rule predicate; one that raises (say, a KeyError) just does not match."""
    try:
        return bool(predicate(body))
    except Exception:  # a test's predicate is arbitrary code; a crash means "no match"
        logger.exception("fake_llm: rule predicate raised")
        return False


def start_fake_llm(**kwargs: Any) -> FakeLLMServer:
    """Create and start a :class:`FakeLLMServer`; the caller must :meth:`~FakeLLMServer.stop` it."""
    return FakeLLMServer(**kwargs).start()


class _HTTPServer(ThreadingHTTPServer):
    """Threading server that knows its :class:`FakeLLMServer` and its open connections."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # 50 clients connect at once; the default backlog is 5

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        fake: FakeLLMServer,
    ) -> None:
        self.fake = fake
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conn_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conn_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            # The client went away (a timeout test, a cancelled stream): not a server bug.
            logger.debug("fake_llm: client %s disconnected: %s", client_address, error)
        else:
            logger.exception("fake_llm: error while serving %s", client_address)

    def close_all_connections(self) -> None:
        """Close kept-alive client connections so no handler thread outlives the server."""
        with self._conn_lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by the peer


class _Handler(BaseHTTPRequestHandler):
    """Serves one connection (several requests with keep-alive)."""

    protocol_version = "HTTP/1.1"
    # Small SSE writes must leave at once: with Nagle's algorithm on, each one can
    # wait ~40 ms for the client's delayed ACK, which made every fake call ~45 ms.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("fake_llm: " + format, *args)

    @property
    def fake(self) -> FakeLLMServer:
        return self.server.fake

    # routing --------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._record({})
        if self.path.rstrip("/") == MODELS_PATH:
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake_llm"}
                for m in self.fake.models
            ]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_error(404, f"fake_llm: unknown path {self.path}")

    def do_POST(self) -> None:
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        self._record(body)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == CHAT_PATH:
            self._chat(body)
        elif path == EMBEDDINGS_PATH:
            self._embeddings(body)
        else:
            self._send_error(404, f"fake_llm: unknown path {self.path}")

    def _record(self, body: dict[str, Any]) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = self.path.split("?", 1)[0].rstrip("/")
        self.fake._record(RecordedRequest(self.command, path, body, headers, time.monotonic()))

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # skip trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    # endpoints ------------------------------------------------------------------------

    def _chat(self, body: dict[str, Any]) -> None:
        item = self.fake._next_item(body)
        if item is None:
            self._send_error(500, _no_script_message(body))
        elif isinstance(item, Fail):
            self._send_error(item.status, item.message)
        elif isinstance(item, Hang):
            self.fake._wait(item.seconds)
            self.close_connection = True
        elif isinstance(item, CutStream):
            self._cut_stream(body, item)
        elif body.get("stream"):
            self._stream_reply(body, item)
        else:
            self._plain_reply(body, item)

    def _embeddings(self, body: dict[str, Any]) -> None:
        texts = _embedding_inputs(body.get("input", ""))
        dim = int(body.get("dimensions") or self.fake.embedding_dim)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = fake_embedding(text, dim)
            embedding: list[float] | str = vector
            if as_base64:
                embedding = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(t) for t in texts) // 4 + len(texts)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", DEFAULT_MODEL),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _plain_reply(self, body: dict[str, Any], reply: Reply) -> None:
        self.fake._hold(reply)
        message: dict[str, Any] = {"role": "assistant", "content": reply.full_text}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        payload = {
            "id": self.fake._next_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", DEFAULT_MODEL),
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
            "usage": _usage(body, reply),
        }
        self._send_json(200, payload)

    def _stream_reply(self, body: dict[str, Any], reply: Reply) -> None:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunk = _ChunkFactory(self.fake._next_id(), body.get("model", DEFAULT_MODEL))
        self._start_stream()
        self.fake._hold(reply)
        deltas = [{"role": "assistant", "content": ""}]
        deltas += [{"reasoning_content": piece} for piece in reply.reasoning_pieces()]
        deltas += [{"content": piece} for piece in reply.content_pieces()]
        for index, delta in enumerate(deltas):
            if index > 1:
                self.fake._wait(reply.delay)
            self._send_event(chunk.make(delta))
            if reply.sent_at is not None and "content" in delta and index > 0:
                reply.sent_at.append(time.time())
        self._send_event(chunk.make({}, finish_reason=reply.finish_reason))
        if include_usage:
            self._send_event(chunk.usage(_usage(body, reply)))
        self._send_event("[DONE]")
        self._send_chunk(b"")  # the zero-length chunk ends the chunked body

    def _cut_stream(self, body: dict[str, Any], cut: CutStream) -> None:
        chunk = _ChunkFactory(self.fake._next_id(), body.get("model", DEFAULT_MODEL))
        self._start_stream()
        self._send_event(chunk.make({"role": "assistant", "content": ""}))
        for piece in cut.content_pieces():
            self._send_event(chunk.make({"content": piece}))
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # the client may already be gone

    # wire helpers ---------------------------------------------------------------------

    def _send_json(self, status: int, payload: dict[str, Any], **headers: str) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str) -> None:
        # retry-after-ms is what the OpenAI SDK reads first; it ignores a retry-after of 0
        # and would back off 0.5-1 s per retry instead.
        extra = {"retry_after": "0", "retry_after_ms": "1"} if status == 429 else {}
        self._send_json(status, error_body(status, message), **extra)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _send_event(self, payload: dict[str, Any] | str) -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        self._send_chunk(f"data: {data}\n\n".encode())

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


@dataclass
class _ChunkFactory:
    """Builds the ``chat.completion.chunk`` objects of one stream."""

    id: str
    model: str
    created: int = field(default_factory=lambda: int(time.time()))

    def _base(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "fp_fake_llm",
        }

    def make(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**self._base(), "choices": [choice]}

    def usage(self, usage: dict[str, int]) -> dict[str, Any]:
        return {**self._base(), "choices": [], "usage": usage}


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    if reply.usage is not None:
        prompt, completion = reply.usage
    else:
        prompt = estimate_prompt_tokens(body.get("messages") or [])
        completion = len(reply.full_text) // 4 + 1
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _no_script_message(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    last = _content_text(messages[-1].get("content")) if messages else ""
    preview = last if len(last) <= 120 else last[:117] + "..."
    return f"{NO_SCRIPT_MESSAGE} (model={body.get('model')!r}, last message={preview!r})"
