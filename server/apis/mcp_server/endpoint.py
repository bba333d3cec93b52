"""`/mcp` on Cadre's own port: the MCP server (streamable HTTP) inside Cadre's WSGI app.

The official SDK serves MCP as an ASGI app; Cadre is WSGI (Flask and
Flask-SocketIO in threading mode). `a2wsgi` runs the ASGI app on an event
loop of its own thread ("cadre-mcp"; server/apis/asgi_mount.py), so a slow
client never touches the agents' loop. The SDK's session manager needs its
task group running for as long as requests come (an ASGI server would run it
in the app's lifespan, which a2wsgi does not send): it is entered on that
loop when the first request comes and left at `stop()`.

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

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from werkzeug.wrappers import Response

from server.apis.asgi_mount import AsgiMount, Built, WsgiApp, over_limit, refuse
from server.apis.key import KeyCheck, Refusal

if TYPE_CHECKING:
    from accounts.service import Accounts
    from server.security.hosts import HostPolicy
    from store.chats import ChatManager

log = logging.getLogger(__name__)

PATH = "/mcp"
#: Largest request body (the SDK's own limit, which it checks only for a declared length).
BODY_LIMIT = 4 * 1024 * 1024
#: Where a request's task rides in the WSGI environ (a2wsgi passes it to the scope).
REQUEST_KEY = "cadre.mcp.request"
#: The name of the user the request's key acts as ("": the desktop mode), in the environ.
USER_KEY = "cadre.mcp.user"
KEY = KeyCheck("the MCP server", "API key: send the api_key setting as X-API-Key or as "
               "Authorization: Bearer <key>")  # fmt: skip


class McpEndpoint:
    """WSGI middleware: `/mcp` to the MCP server (after the key check), the rest to `app`."""

    def __init__(self, app: WsgiApp, chats: ChatManager, policy: HostPolicy,
                 accounts: Accounts) -> None:  # fmt: skip
        self.app = app
        self.chats = chats
        self.policy = policy
        self.accounts = accounts
        self._mount = AsgiMount(
            self._build, name="MCP server", path=PATH, thread_name="cadre-mcp",
            request_key=REQUEST_KEY, log=log,
        )  # fmt: skip

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO", "") not in (PATH, PATH + "/"):
            return self.app(environ, start_response)
        refusal = self._refusal(environ) or over_limit(environ, BODY_LIMIT)
        if refusal is None and environ.get("REQUEST_METHOD") == "GET":
            # Stateless: there is no stream to push on, and the SDK would hold a GET open
            # without ever starting its response. The MCP spec allows a 405 here.
            refusal = refuse(405, "this MCP server is stateless: send requests with POST")
            refusal.headers["Allow"] = "POST"
        if refusal is not None:
            return refusal(environ, start_response)
        return self._mount(environ, start_response)

    def _refusal(self, environ: dict[str, Any]) -> Response | None:
        found = KEY.check(environ.get("HTTP_X_API_KEY"), environ.get("HTTP_AUTHORIZATION"),
                          self.accounts)  # fmt: skip
        if isinstance(found, Refusal):
            return refuse(found.status, found.message)
        # The tools act as the key's owner (server/apis/mcp_server/tools.py reads it).
        environ[USER_KEY] = found.user.name if found.user else ""
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and not self.policy.allows_origin(origin):
            return refuse(403, f"requests from origin {origin[:100]!r} are refused")
        return None

    def _build(self) -> Built:
        """The SDK's app and its session manager (run while requests come)."""
        # Imported at the first request: the SDK takes seconds to import, and most
        # set-ups never serve MCP (tests/unit/mcp_client/test_lazy_sdk.py).
        from mcp.server.transport_security import TransportSecuritySettings

        from server.apis.mcp_server.tools import build_mcp_server

        server = build_mcp_server(self.chats)
        app = server.streamable_http_app(
            streamable_http_path=PATH, stateless_http=True, json_response=False,
            # The Host check is HostGuard's, with Cadre's allowlist (allowed_hosts too).
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )  # fmt: skip
        return Built(app, server.session_manager.run)

    def stop(self) -> None:
        """Leave the session manager and end the loop (in-flight requests are cancelled)."""
        self._mount.stop()
