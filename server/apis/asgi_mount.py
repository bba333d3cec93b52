"""An ASGI app served inside Cadre's WSGI server, on an event loop of its own thread.

The MCP and A2A SDKs serve their protocols as ASGI (Starlette) apps; Cadre is WSGI
(Flask and Flask-SocketIO in threading mode). `AsgiMount` runs one such app through
`a2wsgi` on a loop of a thread of its own, so a slow client never touches the agents'
loop: it builds the app when the first request comes (the SDKs take seconds to import,
and most set-ups never serve them), runs the app's lifespan context there if it has one
(an ASGI server would run it in the app's lifespan, which a2wsgi does not send), cancels
a request's task when its client hangs up (a2wsgi leaves it waiting to send otherwise;
the run goes on in Cadre), and ends the loop at `stop()`. The endpoints
(server/apis/mcp_server/endpoint.py, server/apis/a2a/endpoint.py) keep their paths, key
checks and refusals; `refuse` and `over_limit` are the refusals they share.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import json
import logging
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from werkzeug.wrappers import Response
from werkzeug.wsgi import ClosingIterator, get_content_length, get_input_stream

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

#: JSON-RPC's "invalid request" error code (the SDKs' own name for it).
INVALID_REQUEST = -32600
#: Seconds to wait for the loop to start or stop, and for a request's ASGI task to end
#: once its response is sent.
GRACE = 10.0
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def refuse(status: int, message: str) -> Response:
    """A refusal as a JSON-RPC error (no request id): the protocols' clients show its message."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return Response(json.dumps(error), status=status, mimetype="application/json")


def over_limit(environ: dict[str, Any], limit: int) -> Response | None:
    """A 413 for a body over `limit` bytes; else None, a chunked body made a sized one.

    a2wsgi reads exactly `Content-Length` bytes (none without it), so a client that
    sends its body chunked would otherwise be answered as if it sent nothing; it is
    read here, one byte past the limit so that a body over it is told apart."""
    length = get_content_length(environ)
    if length is None:
        data = get_input_stream(environ, max_content_length=limit + 1).read()
        environ["wsgi.input"] = io.BytesIO(data)
        environ["CONTENT_LENGTH"] = str(length := len(data))
    if length > limit:
        return refuse(413, f"request body over {limit // 1024 // 1024} MB")
    return None


@dataclass(frozen=True)
class Built:
    """What an endpoint's `build` gives: the ASGI app, and the context the app needs
    entered on its loop for as long as requests come (None: it needs none)."""

    app: ASGIApp
    lifespan: Callable[[], AbstractAsyncContextManager[Any]] | None = None


@dataclass
class _Request:
    """One request's ASGI task, so hanging up can cancel it."""

    task: asyncio.Task[Any] | None = None

    def cancel(self, loop: asyncio.AbstractEventLoop) -> None:
        task = self.task
        if task is not None and not task.done() and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)


@dataclass
class _Served:
    """The running app: its loop and thread, the WSGI face, and its lifespan's time on
    the loop (None without one) with the event that ends it."""

    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    wsgi: WsgiApp
    serving: concurrent.futures.Future[None] | None
    stop: asyncio.Event


class AsgiMount:
    """A WSGI app that serves each request on the app `build` makes, started on the first
    request on a thread named `thread_name`, stopped once by `stop()`. `name` ("MCP
    server") and `path` word its log lines, written to `log`; `request_key` is where a
    request's task is noted in the WSGI environ (a2wsgi passes it to the scope)."""

    def __init__(self, build: Callable[[], Built], *, name: str, path: str, thread_name: str,
                 request_key: str, log: logging.Logger) -> None:  # fmt: skip
        self._build = build
        self._name = name
        self._path = path
        self._thread_name = thread_name
        self._request_key = request_key
        self._log = log
        self._lock = threading.Lock()
        self._served: _Served | None = None
        self._stopped = False

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        """Serve an accepted request (the endpoint has checked it): a 503 once stopped."""
        served = self._serve()
        if served is None:
            return refuse(503, "Cadre is shutting down")(environ, start_response)
        request = _Request()
        environ[self._request_key] = request
        answer = served.wsgi(environ, start_response)
        return ClosingIterator(answer, lambda: request.cancel(served.loop))

    def _serve(self) -> _Served | None:
        """The running app, started on first use (None once stopped)."""
        with self._lock:
            if self._served is None and not self._stopped:
                self._served = self._start()
            return self._served

    def _start(self) -> _Served:
        from a2wsgi import ASGIMiddleware

        # Built (the SDK imported) before the loop exists: a build that fails leaves no
        # thread behind, and the next request tries again.
        built = self._build()
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name=self._thread_name, daemon=True)
        thread.start()
        stop = asyncio.Event()
        serving = None
        if built.lifespan is not None:
            lifespan = built.lifespan
            ready = threading.Event()

            async def serve() -> None:
                async with lifespan():
                    ready.set()
                    await stop.wait()

            serving = asyncio.run_coroutine_threadsafe(serve(), loop)
            if not ready.wait(GRACE):
                serving.cancel()
                loop.call_soon_threadsafe(loop.stop)
                raise RuntimeError(f"the {self._name} did not start within {GRACE:g} s")
        app = _tracked(built.app, self._request_key)
        wsgi = ASGIMiddleware(app, wait_time=GRACE, loop=loop)  # type: ignore[arg-type]
        self._log.info("%s started at %s", self._name, self._path)
        return _Served(loop, thread, wsgi, serving, stop)

    def stop(self) -> None:
        """Leave the lifespan and end the loop (in-flight requests are cancelled; their
        runs go on in Cadre)."""
        with self._lock:
            self._stopped = True
            served, self._served = self._served, None
        if served is None:
            return
        loop = served.loop
        # Never raises: Cadre's own shutdown (saving every chat) comes after this.
        try:
            if served.serving is not None:
                loop.call_soon_threadsafe(served.stop.set)
                served.serving.result(GRACE)
            asyncio.run_coroutine_threadsafe(_cancel_all(), loop).result(GRACE)
        except Exception:
            self._log.exception("the %s did not stop cleanly", self._name)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            served.thread.join(GRACE)
            if not served.thread.is_alive():
                loop.close()


def _tracked(app: ASGIApp, request_key: str) -> ASGIApp:
    """`app`, each request's task noted in its `_Request` (see AsgiMount.__call__)."""

    async def tracked(scope: Scope, receive: Receive, send: Send) -> None:
        request = scope.get("wsgi_environ", {}).get(request_key)
        if isinstance(request, _Request):
            request.task = asyncio.current_task()
        await app(scope, receive, send)

    return tracked


async def _cancel_all() -> None:
    """Cancel what still runs on the loop (requests cut by the shutdown)."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
