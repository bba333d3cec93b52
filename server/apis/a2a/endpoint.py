"""A2A on Cadre's own port: the agent card at `/.well-known/agent-card.json` and the
JSON-RPC endpoint at `/a2a`, inside Cadre's WSGI app.

The card is public, as the protocol expects (a client reads it to learn where to send
tasks and how to authenticate); it is built per request with the address the request
came to (after the `Host` check and a trusted proxy's scheme), and names no secret
(server/apis/a2a/card.py). `/a2a` takes the user's API key as every other API does
(server/apis/key.py: `X-API-Key`, or `Authorization: Bearer <key>`; no key set at all:
403, a missing or wrong one: 401, as JSON-RPC errors), and the tasks act as the key's
owner. A request from a page of a foreign origin is refused.

The endpoint speaks the protocol's 1.0 and, through the SDK's compatibility layer, 0.3
(the card names both). The SDK serves A2A as an ASGI (Starlette) app; Cadre is WSGI. As the
MCP server does (server/apis/mcp_server/endpoint.py), `a2wsgi` runs it on an event loop of
its own thread ("cadre-a2a"; server/apis/asgi_mount.py), started by the first request (the
SDK is imported then) and stopped with the server; a client that hangs up has its request's
task cancelled, and the run goes on. Tasks are kept on disk, each owner's apart
(server/apis/a2a/tasks.py); their chats are Cadre's, saved as every chat is.
"""

from __future__ import annotations

import io
import json
import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from werkzeug.wrappers import Request, Response
from werkzeug.wsgi import get_input_stream

from server.apis.a2a.contexts import ContextMap
from server.apis.asgi_mount import AsgiMount, Built, WsgiApp, over_limit, refuse
from server.apis.key import KeyCheck, Refusal

if TYPE_CHECKING:
    from accounts.service import Accounts
    from cluster.node import Node
    from server.security.hosts import HostPolicy
    from store.chats import ChatManager

log = logging.getLogger(__name__)

CARD_PATH = "/.well-known/agent-card.json"
#: The JSON-RPC endpoint (server/apis/a2a/card.py names it on the card).
RPC_PATH = "/a2a"
#: Largest request body.
BODY_LIMIT = 4 * 1024 * 1024
#: Where a request's task and its key's owner ride in the WSGI environ.
REQUEST_KEY = "cadre.a2a.request"
USER_KEY = "cadre.a2a.user"
KEY = KeyCheck("the A2A endpoint", "API key: send the api_key setting (or a key of your own) "
               "as X-API-Key or as Authorization: Bearer <key>")  # fmt: skip
#: The card's `version`: the A2A face of Cadre, which changes when the card's meaning does.
CARD_VERSION = "1.0.0"
#: What a card request other than GET is told.
NOT_GET = "the agent card is read with GET"


class A2aEndpoint:
    """WSGI middleware: the card and `/a2a` to A2A, the rest to `app`."""

    def __init__(self, app: WsgiApp, chats: ChatManager, policy: HostPolicy,
                 accounts: Accounts, node: Node) -> None:  # fmt: skip
        self.app = app
        self.chats = chats
        #: This process: its cluster's lock, and whether a task's process still runs.
        self.node = node
        # Around each change of the contexts' map: the cluster's lock, when there is one.
        lock = (lambda: node.shared_lock("a2a-contexts")) if node.clustered else None
        #: Which chat each context is (one map: the executor's and account deletion's).
        self.contexts = ContextMap(lock=lock)
        self.policy = policy
        self.accounts = accounts
        self._mount = AsgiMount(
            self._build, name="A2A endpoint", path=RPC_PATH, thread_name="cadre-a2a",
            request_key=REQUEST_KEY, log=log,
        )  # fmt: skip

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        if path == CARD_PATH:
            return self._card(environ)(environ, start_response)
        if path not in (RPC_PATH, RPC_PATH + "/"):
            return self.app(environ, start_response)
        refusal = self._refusal(environ)
        if refusal is not None:
            return refusal(environ, start_response)
        environ["PATH_INFO"] = RPC_PATH  # the SDK's route has no trailing slash
        return self._mount(environ, start_response)

    def _card(self, environ: dict[str, Any]) -> Response:
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return Response(NOT_GET, status=405, headers={"Allow": "GET"})
        from a2a.server.request_handlers.response_helpers import agent_card_to_dict

        from server.apis.a2a.card import agent_card

        base = Request(environ).host_url.rstrip("/")
        card = agent_card_to_dict(agent_card(base, CARD_VERSION))
        answer = Response(json.dumps(card), mimetype="application/json")
        answer.headers["Cache-Control"] = "no-cache"  # the profiles may change at any time
        return answer

    def _refusal(self, environ: dict[str, Any]) -> Response | None:
        found = KEY.check(environ.get("HTTP_X_API_KEY"), environ.get("HTTP_AUTHORIZATION"),
                          self.accounts)  # fmt: skip
        if isinstance(found, Refusal):
            log.info("A2A request refused (%s): %s", found.status, found.message)
            return refuse(found.status, found.message)
        environ[USER_KEY] = found.user.name if found.user else ""
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and not self.policy.allows_origin(origin):
            return refuse(403, f"requests from origin {origin[:100]!r} are refused")
        if environ.get("REQUEST_METHOD") != "POST":
            refusal = refuse(405, "send A2A requests (JSON-RPC) with POST")
            refusal.headers["Allow"] = "POST"
            return refusal
        return over_limit(environ, BODY_LIMIT) or _not_json_numbers(environ)

    def hand_over(self, name: str, heir: str | None) -> None:
        """A deleted account's A2A tasks and contexts: its heir's, else gone (no account
        made later under its name may read them)."""
        from server.apis.a2a import task_files

        with self.node.shared_lock("a2a-tasks"):  # no save of theirs half done meanwhile
            task_files.hand_over(name, heir)
        self.contexts.hand_over(name, heir)

    def _build(self) -> Built:
        """The SDK's JSON-RPC routes, both protocol versions, as a Starlette app."""
        # Imported at the first request: most set-ups never serve A2A.
        from a2a.server.request_handlers import DefaultRequestHandler
        from a2a.server.routes import create_jsonrpc_routes
        from starlette.applications import Starlette

        from server.apis.a2a.card import agent_card
        from server.apis.a2a.context import CadreCallContext
        from server.apis.a2a.executor import CadreExecutor
        from server.apis.a2a.tasks import FileTaskStore

        executor = CadreExecutor(self.chats, self.contexts)
        store = FileTaskStore(self.node, running=executor.running,
                              cancelled_elsewhere=executor.cancelled_elsewhere)  # fmt: skip
        handler = DefaultRequestHandler(
            agent_executor=executor, task_store=store,
            agent_card=agent_card("http://localhost", CARD_VERSION),  # its capabilities alone
        )  # fmt: skip
        routes = create_jsonrpc_routes(
            handler, RPC_PATH, context_builder=CadreCallContext(), enable_v0_3_compat=True
        )
        return Built(Starlette(routes=routes))

    def stop(self) -> None:
        """End the loop (in-flight requests are cancelled; their runs go on in Cadre)."""
        self._mount.stop()


class _NotANumber(ValueError):
    pass


def _no_constant(name: str) -> object:
    raise _NotANumber(name)


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):  # 1e999: as infinite as Infinity
        raise _NotANumber(text[:40])
    return number


def _not_json_numbers(environ: dict[str, Any]) -> Response | None:
    """A 400 for a body that holds NaN, Infinity or a number too large to be one (1e999:
    Python's JSON reader takes them, the protocol's JSON does not): a task holding one
    could never be told again."""
    body = get_input_stream(environ).read()  # no more than its Content-Length says
    environ["wsgi.input"] = io.BytesIO(body)  # read again by the SDK
    try:
        json.loads(body, parse_constant=_no_constant, parse_float=_finite)
    except _NotANumber as exc:
        return refuse(400, f"the request holds {exc}, which JSON has no number for: send"
                           " such a value as a string")  # fmt: skip
    except (ValueError, RecursionError):
        pass  # not JSON (or too deep for it): the SDK answers it as the protocol says
    return None
