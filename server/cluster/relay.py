"""Requests handed to the node that runs their chat, so every node answers the same.

A route or a page's event that meets a chat another node runs (`Elsewhere`, raised by the
chat store or by the run queue's placement: server/cluster/placement.py) hands itself to
that node: an HTTP request is sent there as it came (method, path, query, body, headers;
an API key goes with it), a page's event as a POST to `/api/relay/event`. Either carries
the `X-Cadre-Relay` header, signed with the cluster's secret (cluster/relay_auth.py), which
tells the node that gets it that a peer sends it and for whom: a page's login is known only
to the node it logged in to. The answer goes back to the caller as it came, streamed.

A relayed request is never relayed again: if its chat moved on meanwhile (its run ended
and another node took the next), the caller hears so, in words, and sends it again.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
from collections.abc import Iterator
from typing import Any

from flask import Flask, Response, current_app, g, jsonify, request

from cluster.node import Node, NodesUnknown
from cluster.relay_auth import HEADER, BadRelay, sign, verify
from server.apis.agent_calls import WAIT_LIMIT
from server.routes.routing import error
from server.security import identity
from store.placement import ClusterDown, Elsewhere

log = logging.getLogger(__name__)

#: The route a page's event is handed over on.
EVENT_PATH = "/api/relay/event"
#: Headers that belong to one connection, not to the request: never handed on.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "te", "trailers", "transfer-encoding", "upgrade", "host",
                        "content-length", HEADER.lower()})  # fmt: skip
#: Seconds a node waits for its peer to answer (an API call may wait for its answer).
ANSWER_WAIT = WAIT_LIMIT + 30
MOVED = ("this chat moved to another node as your request arrived (its run ended and"
         " another began): send it again")  # fmt: skip


def node() -> Node:
    found: Node = current_app.extensions["cadre.node"]
    return found


def _peer(node_id: str) -> tuple[str, int]:
    """Where node `node_id` serves; ClusterDown in words when it is not alive."""
    try:
        address = node().address_of(node_id)
    except NodesUnknown as exc:
        raise ClusterDown(str(exc)) from None
    if address is None:
        ttl = node().config.ttl
        raise ClusterDown(
            f"node {node_id}, which runs this chat, does not answer: another node takes"
            f" its chats over within about {ttl + ttl / 3:.0f} s. Try again then"
        )
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:  # by address: a node on every interface answers any IP address as its `Host`
        host = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0][4][0]
    except OSError as exc:
        raise ClusterDown(f"node {node_id}'s address {address} does not resolve here ({exc}):"
                          " give each node a name the others can reach") from None  # fmt: skip
    return host, int(port)


def _send(node_id: str, method: str, target: str, body: bytes,
          headers: dict[str, str]) -> http.client.HTTPResponse:  # fmt: skip
    host, port = _peer(node_id)
    try:
        secret = node().relay_secret()
    except NodesUnknown as exc:
        raise ClusterDown(str(exc)) from None
    here = node().config.node_id
    headers[HEADER] = sign(secret, here, method, target, identity.viewer() or "", body)
    connection = http.client.HTTPConnection(host, port, timeout=ANSWER_WAIT)
    try:
        connection.request(method, target, body=body, headers=headers)
        return connection.getresponse()
    except OSError as exc:
        connection.close()
        log.error("handing a request for node %s to %s:%d failed: %s", node_id, host, port, exc)
        raise ClusterDown(f"node {node_id}, which runs this chat, cannot be reached now"
                          f" ({exc}): try again in a few seconds") from None  # fmt: skip


def relay_request(exc: Elsewhere) -> Response:
    """This HTTP request, answered by the node that runs its chat."""
    if g.get("cadre_relayed") is not None:
        return error(MOVED, 409)
    body = request.get_data(cache=True)
    target = request.full_path if request.query_string else request.path
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
    answer = _send(exc.node, request.method, target, body, headers)
    kept = [(k, v) for k, v in answer.getheaders() if k.lower() not in HOP_BY_HOP]

    def stream() -> Iterator[bytes]:
        try:
            while chunk := answer.read1(65536):
                yield chunk
        finally:
            answer.close()

    return Response(stream(), status=answer.status, headers=kept)


def relay_event(event: str, data: Any, node_id: str) -> dict[str, Any]:
    """A page's event, answered by node `node_id` (its acknowledgement, as it came)."""
    body = json.dumps({"event": event, "data": data}).encode()
    answer = _send(node_id, "POST", EVENT_PATH, body, {"Content-Type": "application/json"})
    with answer:
        text = answer.read()
    try:
        ack = json.loads(text)
    except ValueError:
        ack = None
    if not isinstance(ack, dict):
        log.error("node %s answered a relayed %s with %d: %.200r", node_id, event,
                  answer.status, text)  # fmt: skip
        return {"ok": False, "error": f"node {node_id} could not answer: try again"}
    return ack


def admit() -> Response | tuple[Response, int] | None:
    """The guard's look at a relayed request: a peer's (the person it names acts), or
    refused. None when the request is no relayed one."""
    value = request.headers.get(HEADER)
    if value is None:
        return None
    here = node()
    target = request.full_path if request.query_string else request.path
    try:
        if not here.clustered:
            raise BadRelay("this process is no node of a cluster")
        relayed = verify(here.relay_secret(), value, request.method, target,
                         request.get_data(cache=True))  # fmt: skip
        if not here.first_use(relayed.nonce):
            raise BadRelay("the relay header was used before")
    except (BadRelay, NodesUnknown) as exc:
        log.warning("refused a relayed %s %s: %s", request.method, request.path, exc)
        return error(f"refused: {exc}", 403)
    g.cadre_relayed = relayed
    if relayed.user:
        user = identity.accounts().users.get(relayed.user)
        if user is None or user.disabled:
            return error(f"no user {relayed.user!r} may act here", 403)
        identity.set_user(user)
    return None


def install(app: Flask) -> None:
    """Hand requests for chats of other nodes over to them, and answer the page events
    other nodes hand here."""

    @app.errorhandler(Elsewhere)
    def elsewhere(exc: Elsewhere) -> Response | tuple[Response, int]:
        try:
            return relay_request(exc)
        except ClusterDown as down:  # raised in a handler, Flask would answer a bare 500
            log.warning("%s %s: %s", request.method, request.path, down)
            return error(str(down), 503)

    @app.post(EVENT_PATH)
    def page_event() -> Response | tuple[Response, int]:
        if g.get("cadre_relayed") is None:
            return error("only another node of the cluster may send this", 403)
        asked = request.get_json(silent=True)
        if not isinstance(asked, dict) or not isinstance(asked.get("event"), str):
            return error('send {"event": "<name>", "data": ...}', 400)
        handler = current_app.extensions["cadre.page_events"].handlers.get(asked["event"])
        if handler is None:
            return error(f"no page event {asked['event'][:60]!r}", 404)
        return jsonify(handler(asked.get("data")))
