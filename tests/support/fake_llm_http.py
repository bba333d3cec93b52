"""The fake model server's HTTP side: the threading server and the handler that turns
a request into a scripted reply, an SSE stream or an error (see fake_llm.py)."""

from __future__ import annotations

import base64
import json
import logging
import select
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from tests.support.fake_llm_audio import AUDIO_PATHS, answer_audio, form_fields
from tests.support.fake_llm_script import (
    CHAT_PATH,
    DEFAULT_MODEL,
    EMBEDDINGS_PATH,
    MODELS_PATH,
    NO_SCRIPT_MESSAGE,
    OLLAMA_TAGS_PATH,
    REFUSED_MESSAGE,
    CutStream,
    Endless,
    Fail,
    Hang,
    RecordedRequest,
    Reply,
    _content_text,
    _embedding_inputs,
    error_body,
    estimate_prompt_tokens,
    fake_embedding,
)

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from tests.support.fake_llm import FakeLLMServer


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
        if not self._admitted({}):
            return
        self._record({})
        path = self.path.split("?", 1)[0].rstrip("/")
        failure = self.fake.models_failure
        if path in (MODELS_PATH, OLLAMA_TAGS_PATH) and failure is not None:
            self._send_error(failure, "fake_llm: scripted failure of the model list")
        elif path == MODELS_PATH:
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake_llm"}
                for m in self.fake.models
            ]
            self._send_json(200, {"object": "list", "data": data})
        elif path == OLLAMA_TAGS_PATH:
            self._send_json(200, {"models": [{"name": m, "model": m} for m in self.fake.models]})
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
        form = form_fields(self.headers.get("content-type", ""), raw)
        if form is not None:  # an upload (a recording to transcribe)
            body = form
        if not self._admitted(body):
            return
        self._record(body)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == CHAT_PATH:
            self._chat(body)
        elif path == EMBEDDINGS_PATH:
            self._embeddings(body)
        elif path in AUDIO_PATHS:
            answer_audio(self, path, body)
        else:
            self._send_error(404, f"fake_llm: unknown path {self.path}")

    def _admitted(self, body: dict[str, Any]) -> bool:
        """Take a test's prefix off `self.path`; False, once answered with HTTP 410, for a
        request of a test that has ended (see `FakeLLMServer.begin_test`)."""
        asked = self.path
        self.path, admitted = self.fake._admit(asked)
        if not admitted:
            headers = {k.lower(): v for k, v in self.headers.items()}
            self.fake._refuse(RecordedRequest(self.command, asked, body, headers, time.monotonic()))
            logger.warning("fake_llm: %s %s refused: its test has ended", self.command, asked)
            self._send_error(410, REFUSED_MESSAGE)
        return admitted

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
        elif isinstance(item, Endless):
            self._endless_stream(body, item)
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
        content_from = len(deltas)  # where the content pieces start, for `holds`
        deltas += [{"content": piece} for piece in reply.content_pieces()]
        for index, delta in enumerate(deltas):
            if index > 1:
                self.fake._wait(reply.delay)
            hold = reply.holds.get(index - content_from) if index >= content_from else None
            if hold is not None:
                hold.wait(30)
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

    def _endless_stream(self, body: dict[str, Any], item: Endless) -> None:
        chunk = _ChunkFactory(self.fake._next_id(), body.get("model", DEFAULT_MODEL))
        item.stats.add(begun=1)
        self.close_connection = True
        # The filler events, encoded once: the server must outrun any client.
        fillers = []
        for text in item.fillers():
            event = f"data: {json.dumps(chunk.make({'content': text}))}\n\n".encode()
            fillers.append(b"%x\r\n%s\r\n" % (len(event), event))
        deadline = time.monotonic() + item.max_seconds
        sent = 0
        try:
            self._start_stream()
            self._send_event(chunk.make({"role": "assistant", "content": ""}))
            self._send_event(chunk.make({"content": item.head}))
            if item.first_delay and self._client_gone(item.first_delay):
                raise ConnectionResetError("client closed the stream")
            while time.monotonic() < deadline and not self.fake._stopping.is_set():
                if item.stall_after is not None and sent >= item.stall_after:
                    if self._client_gone(0.05):
                        raise ConnectionResetError("client closed the stream")
                    continue
                self.wfile.write(fillers[sent % 2])
                sent += 1
                item.stats.add(chars_sent=item.chunk_size)
                if item.delay and self._client_gone(item.delay):
                    raise ConnectionResetError("client closed the stream")
        except OSError:  # the client closed the connection: what the tests wait for
            item.stats.add(client_closed=1)
            return
        item.stats.add(gave_up=1)
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # the client may be gone just now

    def _client_gone(self, seconds: float) -> bool:
        """Wait up to `seconds`; True as soon as the client closes its end."""
        readable, _, _ = select.select([self.connection], [], [], seconds)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

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
