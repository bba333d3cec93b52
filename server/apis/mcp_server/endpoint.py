"""`/mcp` on Cadre's own port: the MCP server (streamable HTTP) inside Cadre's WSGI app.

The official SDK serves MCP as an ASGI app; Cadre is WSGI (Flask and
Flask-SocketIO in threading mode). `a2wsgi` runs the ASGI app on an event
loop of its own thread ("cadre-mcp"), so a slow client never touches the
agents' loop. The SDK's session manager needs its task group running for as
long as requests come (an ASGI server would run it in the app's lifespan,
which a2wsgi does not send): `McpEndpoint` enters it on that loop when the
first request comes and leaves it at `stop()`.

The SDK is imported when the first request comes (it takes seconds, and most set-ups
never serve MCP). The mount sits inside the `Host` check (server/security/hosts.py,
which also stands for the SDK's own DNS-rebinding check: Cadre's allowlist is the one in
force) and outside Flask's login and CSRF guard: MCP clients hold the API key, sent as
`X-API-Key` or `Authorization: Bearer <key>`. An empty `api_key` setting turns `/mcp`
off (403, like the external API); a missing or wrong key gets 401. A request from a page
of a foreign origin is refused. Refusals are JSON-RPC errors, so an MCP client shows
their words.

Stateless: each POST is answered on its own (no session to keep; a GET, which
would open a stream for the server to push on, is a 405), as an SSE stream so
the progress notifications of a long `send_message` reach the client before its
result. A client that hangs up has its request's ASGI task
cancelled (a2wsgi leaves it waiting to send otherwise); the run goes on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import json
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from werkzeug.wrappers import Response
from werkzeug.wsgi import ClosingIterator, get_content_length, get_input_stream

from server.apis.key import KeyCheck, Refusal

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from accounts.service import Accounts
    from server.security.hosts import HostPolicy
    from store.chats import ChatManager

log = logging.getLogger(__name__)

#: JSON-RPC's "invalid request" error code (the SDK's mcp.types.INVALID_REQUEST).
INVALID_REQUEST = -32600

PATH = "/mcp"
#: Largest request body (the SDK's own limit, which it checks only for a declared length).
BODY_LIMIT = 4 * 1024 * 1024
#: Seconds to wait for the MCP loop to start or stop, and for a request's ASGI task to
#: end once its response is sent.
GRACE = 10.0
#: Where a request's `_Request` rides in the WSGI environ (a2wsgi passes it to the scope).
REQUEST_KEY = "cadre.mcp.request"
#: The name of the user the request's key acts as ("": the desktop mode), in the environ.
USER_KEY = "cadre.mcp.user"
KEY = KeyCheck("the MCP server", "API key: send the api_key setting as X-API-Key or as "
               "Authorization: Bearer <key>")  # fmt: skip
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _refuse(status: int, message: str) -> Response:
    """A refusal as a JSON-RPC error (no request id): MCP clients show its message."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return Response(json.dumps(error), status=status, mimetype="application/json")


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
    """The running MCP app: its loop and thread, the WSGI face, and how to stop it."""

    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    wsgi: WsgiApp
    serving: concurrent.futures.Future[None]  # the session manager's time on the loop
    stop: asyncio.Event


class McpEndpoint:
    """WSGI middleware: `/mcp` to the MCP server (after the key check), the rest to `app`."""

    def __init__(self, app: WsgiApp, chats: ChatManager, policy: HostPolicy,
                 accounts: Accounts) -> None:  # fmt: skip
        self.app = app
        self.chats = chats
        self.policy = policy
        self.accounts = accounts
        self._lock = threading.Lock()
        self._served: _Served | None = None
        self._stopped = False

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO", "") not in (PATH, PATH + "/"):
            return self.app(environ, start_response)
        refusal = self._refusal(environ) or _over_limit(environ)
        if refusal is None and environ.get("REQUEST_METHOD") == "GET":
            # Stateless: there is no stream to push on, and the SDK would hold a GET open
            # without ever starting its response. The MCP spec allows a 405 here.
            refusal = _refuse(405, "this MCP server is stateless: send requests with POST")
            refusal.headers["Allow"] = "POST"
        if refusal is not None:
            return refusal(environ, start_response)
        served = self._serve()
        if served is None:
            return _refuse(503, "Cadre is shutting down")(environ, start_response)
        request = _Request()
        environ[REQUEST_KEY] = request
        answer = served.wsgi(environ, start_response)
        return ClosingIterator(answer, lambda: request.cancel(served.loop))

    def _refusal(self, environ: dict[str, Any]) -> Response | None:
        found = KEY.check(environ.get("HTTP_X_API_KEY"), environ.get("HTTP_AUTHORIZATION"),
                          self.accounts)  # fmt: skip
        if isinstance(found, Refusal):
            return _refuse(found.status, found.message)
        # The tools act as the key's owner (server/apis/mcp_server/tools.py reads it).
        environ[USER_KEY] = found.user.name if found.user else ""
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and not self.policy.allows_origin(origin):
            return _refuse(403, f"requests from origin {origin[:100]!r} are refused")
        return None

    # -- the MCP loop ------------------------------------------------------------

    def _serve(self) -> _Served | None:
        """The running app, started on first use (None once stopped)."""
        with self._lock:
            if self._served is None and not self._stopped:
                self._served = self._start()
            return self._served

    def _start(self) -> _Served:
        # Imported at the first request: the SDK takes seconds to import, and most
        # set-ups never serve MCP (tests/unit/mcp_client/test_lazy_sdk.py).
        from a2wsgi import ASGIMiddleware
        from mcp.server.transport_security import TransportSecuritySettings

        from server.apis.mcp_server.tools import build_mcp_server

        server = build_mcp_server(self.chats)
        app = server.streamable_http_app(
            streamable_http_path=PATH, stateless_http=True, json_response=False,
            # The Host check is HostGuard's, with Cadre's allowlist (allowed_hosts too).
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )  # fmt: skip
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="cadre-mcp", daemon=True)
        thread.start()
        ready = threading.Event()
        stop = asyncio.Event()

        async def serve() -> None:
            async with server.session_manager.run():
                ready.set()
                await stop.wait()

        serving = asyncio.run_coroutine_threadsafe(serve(), loop)
        if not ready.wait(GRACE):
            serving.cancel()
            loop.call_soon_threadsafe(loop.stop)
            raise RuntimeError(f"the MCP server did not start within {GRACE:g} s")
        wsgi = ASGIMiddleware(_tracked(app), wait_time=GRACE, loop=loop)  # type: ignore[arg-type]
        log.info("MCP server started at %s", PATH)
        return _Served(loop, thread, wsgi, serving, stop)

    def stop(self) -> None:
        """Leave the session manager and end the loop (in-flight requests are cancelled)."""
        with self._lock:
            self._stopped = True
            served, self._served = self._served, None
        if served is None:
            return
        loop = served.loop
        # Never raises: Cadre's own shutdown (saving every chat) comes after this.
        try:
            loop.call_soon_threadsafe(served.stop.set)
            served.serving.result(GRACE)
            asyncio.run_coroutine_threadsafe(_cancel_all(), loop).result(GRACE)
        except Exception:
            log.exception("the MCP server did not stop cleanly")
        finally:
            loop.call_soon_threadsafe(loop.stop)
            served.thread.join(GRACE)
            if not served.thread.is_alive():
                loop.close()


def _over_limit(environ: dict[str, Any]) -> Response | None:
    """A 413 for a body over BODY_LIMIT; else None, a chunked body made a sized one.

    a2wsgi reads exactly `Content-Length` bytes (none without it), so a client that
    sends its body chunked would otherwise be answered as if it sent nothing; it is
    read here, one byte past the limit so that a body over it is told apart."""
    length = get_content_length(environ)
    if length is None:
        data = get_input_stream(environ, max_content_length=BODY_LIMIT + 1).read()
        environ["wsgi.input"] = io.BytesIO(data)
        environ["CONTENT_LENGTH"] = str(length := len(data))
    if length > BODY_LIMIT:
        return _refuse(413, f"request body over {BODY_LIMIT // 1024 // 1024} MB")
    return None


def _tracked(app: ASGIApp) -> ASGIApp:
    """`app`, each request's task noted in its `_Request` (see McpEndpoint.__call__)."""

    async def tracked(scope: Scope, receive: Receive, send: Send) -> None:
        request = scope.get("wsgi_environ", {}).get(REQUEST_KEY)
        if isinstance(request, _Request):
            request.task = asyncio.current_task()
        await app(scope, receive, send)

    return tracked


async def _cancel_all() -> None:
    """Cancel what still runs on the MCP loop (requests cut by the shutdown)."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
