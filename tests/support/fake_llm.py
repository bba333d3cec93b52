"""A scripted, OpenAI-compatible HTTP server that tests run the real litellm client against.

Tests fake the wire, not our functions (docs/conventions.md, "Tests"): the server speaks the
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

Besides replies, a script can fail a request (:class:`Fail`), cut a stream
(:class:`CutStream`), say nothing (:class:`Hang`) or stream without end until the client
hangs up (:class:`Endless`, which counts the streams the client closed).

Endpoints: ``POST /v1/chat/completions`` (streamed as Server-Sent Events over chunked
transfer encoding, or a plain JSON body), ``POST /v1/embeddings`` (deterministic unit
vectors from a hash of each input, see :func:`fake_embedding`), ``GET /v1/models`` and, as
Ollama lists its models, ``GET /api/tags`` (both from ``models``; ``models_failure`` makes
them answer an HTTP error).

Audio (tests/support/fake_llm_audio.py): ``POST /v1/audio/transcriptions`` answers
``audio.transcript`` for any uploaded file, ``POST /v1/audio/speech`` a short WAV tone;
``audio.failure`` makes both answer that HTTP status. ``audio_requests`` lists what they got
(an upload's fields parsed, its file as ``{"filename", "content_type", "size", "data"}``).

Which reply a chat request gets: the first rule (in the order added) whose predicate
accepts the parsed JSON body, else the head of the FIFO queue, else an HTTP 500 whose
message starts with "fake_llm: no scripted reply for this request". Rules and the queue
serve chat completions only; embeddings and models are always answered.

One test at a time: while a test holds the server (:meth:`FakeLLMServer.begin_test`, which
the ``llm`` fixture calls), ``base_url`` carries the test's number (``/test-<n>/v1``), and a
request under another test's number is refused (HTTP 410) without touching the queue,
the rules or the records: a test's late request cannot take the next test's reply. The
plain ``/v1`` is always served, for what outlives a test (a module's run_ui.py).

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

import logging
import re
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any

from tests.support.fake_llm_audio import AUDIO_PATHS, AudioScript
from tests.support.fake_llm_http import _Handler, _HTTPServer
from tests.support.fake_llm_script import (
    CHAT_PATH,
    DEFAULT_MODEL,
    EMBEDDINGS_PATH,
    NO_SCRIPT_MESSAGE,
    REFUSED_MESSAGE,
    CutStream,
    Endless,
    EndlessStats,
    Fail,
    Hang,
    Predicate,
    RecordedRequest,
    Reply,
    Rule,
    ScriptItem,
    _QueueSlot,
    fake_embedding,
    last_user_contains,
    model_is,
)

logger = logging.getLogger(__name__)

#: The start of a path under a test's base URL: "/test-<n>/v1/...".
_TEST_PREFIX = re.compile(r"/test-(\d+)(?=/)")

# The script's names are part of this module's face: tests import them from here.
__all__ = [
    "NO_SCRIPT_MESSAGE", "CutStream", "Endless", "EndlessStats", "Fail", "FakeLLMServer", "Hang",
    "REFUSED_MESSAGE", "RecordedRequest",
    "Reply", "fake_embedding", "last_user_contains", "model_is", "start_fake_llm",
]  # fmt: skip


class FakeLLMServer:
    """A scripted OpenAI-compatible server on 127.0.0.1, run in a background thread.

    Use as a context manager or call :meth:`start` / :meth:`stop`. All public methods
    are thread-safe.
    """

    def __init__(self, *, models: Sequence[str] = (DEFAULT_MODEL,), embedding_dim: int = 8) -> None:
        self.models = list(models) or [DEFAULT_MODEL]
        self._default_models = list(self.models)
        #: When set, the model lists (``GET /v1/models``, ``GET /api/tags``) answer this
        #: HTTP status instead (a refused key: 401); `reset` clears it.
        self.models_failure: int | None = None
        self.embedding_dim = embedding_dim
        #: What the audio endpoints answer (fake_llm_audio.py); `reset` puts it back.
        self.audio = AudioScript()
        self._lock = threading.Lock()
        self._queue: deque[_QueueSlot] = deque()
        self._rules: list[Rule] = []
        self._requests: list[RecordedRequest] = []
        #: The requests refused as an ended test's (see `begin_test`), since the last reset.
        self._refused: list[RecordedRequest] = []
        #: The number of the test holding the server (`begin_test`); None between tests.
        self._test: int | None = None
        self._tests_begun = 0
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
        """The ``api_base`` for clients: ``http://127.0.0.1:<port>/v1``, with the test's
        number while a test holds the server (``.../test-<n>/v1``, see `begin_test`)."""
        with self._lock:
            prefix = "" if self._test is None else f"/test-{self._test}"
        return f"http://127.0.0.1:{self.port}{prefix}/v1"

    # tests ----------------------------------------------------------------------------

    def begin_test(self) -> None:
        """Hold the server for one test: reset it; `base_url` names this test until `end_test`.

        Why: a test's model call can reach the server after the test ended. A background
        call (naming a chat once its run ended) whose request went out just before the
        runtime stopped is read by a handler thread that, on a busy machine, runs only
        once the next test has scripted its replies: it took that test's first reply,
        and the test's own first request got the second (seen in a full run under
        pytest-xdist). A request carries its test's number in its URL, so the server
        refuses one whose test is over, whenever it arrives.
        """
        with self._lock:
            self._tests_begun += 1
            self._test = self._tests_begun
        self.reset()

    def end_test(self) -> None:
        """The test is over: requests under its number are refused from now on."""
        with self._lock:
            self._test = None

    def refused_requests(self) -> list[RecordedRequest]:
        """The requests refused as an ended test's since the last reset (not in `requests`)."""
        with self._lock:
            return list(self._refused)

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
            self._refused.clear()
            self.models = list(self._default_models)
            self.models_failure = None
            self.audio = AudioScript()

    # records --------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def chat_requests(self, model: str | None = None) -> list[RecordedRequest]:
        """The recorded ``POST /v1/chat/completions`` requests (only those for ``model`` if
        given: the utility model's, naming a chat, can come in between at any moment)."""
        return [
            r for r in self.requests
            if r.path == CHAT_PATH and (model is None or r.body.get("model") == model)
        ]  # fmt: skip

    def embedding_requests(self) -> list[RecordedRequest]:
        """The recorded ``POST /v1/embeddings`` requests."""
        return [r for r in self.requests if r.path == EMBEDDINGS_PATH]

    def audio_requests(self, path: str | None = None) -> list[RecordedRequest]:
        """The recorded audio requests (only those to ``path`` if given, e.g.
        fake_llm_audio.TRANSCRIPTIONS_PATH)."""
        return [r for r in self.requests if r.path in AUDIO_PATHS and path in (None, r.path)]

    # used by the handler --------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _admit(self, path: str) -> tuple[str, bool]:
        """`path` without a test's prefix, and whether it may be served (see `begin_test`):
        a path without a prefix always, one with a prefix if its test holds the server."""
        prefix = _TEST_PREFIX.match(path)
        if prefix is None:
            return path, True
        with self._lock:
            current = self._test
        return path[prefix.end() :], int(prefix.group(1)) == current

    def _refuse(self, request: RecordedRequest) -> None:
        with self._lock:
            self._refused.append(request)

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
