"""The cluster as the admins see it (cluster/ is the node itself):

    GET /api/cluster    an admin's alone (server/security/guard.py ADMIN_PATHS)

`{"cluster": bool, "node": this node's id, "nodes": [...]}`: each live node with where it
serves, when it started, how many chats it runs and their ids (the chats whose leases it
holds), its limit of runs from the queue and its load (runs / limit), the runs it took
from the queue (since Redis last started), whether it drains,
and when it last said so (its heartbeat in Redis; a process alone lists itself). A Redis
that does not answer is a 503 in words.
`/health` (server/routes/pages.py) adds what `node().health()` says: in a cluster, the
node's id and whether Redis answers, for anyone (a load balancer asks without a login).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from flask import Blueprint, Response, current_app, jsonify

from cluster.node import Node, NodeRecord, NodesUnknown
from server.routes.routing import error

log = logging.getLogger(__name__)

cluster_pages = Blueprint("cluster", __name__)


def node() -> Node:
    """This process as a node (server/app.py makes it: alone, or one of a cluster)."""
    found: Node = current_app.extensions["cadre.node"]
    return found


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def _row(record: NodeRecord, chats: list[str]) -> dict[str, object]:
    load = round(record.runs / record.limit, 3) if record.limit else None
    return {"node": record.node, "address": record.address, "started": _when(record.started),
            "runs": record.runs, "limit": record.limit, "load": load,
            "draining": record.draining, "chats": chats, "taken": record.taken,
            "seen": _when(record.seen)}  # fmt: skip


@cluster_pages.get("/api/cluster")
def cluster_view() -> Response | tuple[Response, int]:
    this = node()
    try:
        nodes = this.nodes()
        placed = this.placements()
    except NodesUnknown as exc:  # logged where Redis failed (cluster/redis_node.py)
        return error(str(exc), 503)
    held: dict[str, list[str]] = {}
    for chat_id, holder in sorted(placed.items()):
        held.setdefault(holder, []).append(chat_id)
    rows = [_row(record, held.get(record.node, [])) for record in nodes]
    return jsonify({"cluster": this.config.enabled, "node": this.config.node_id, "nodes": rows})
