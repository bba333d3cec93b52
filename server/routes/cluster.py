"""The cluster as the admins see it (cluster/ is the node itself):

    GET /api/cluster    an admin's alone (server/security/guard.py ADMIN_PATHS)

`{"cluster": bool, "node": this node's id, "nodes": [...]}`: each live node with where it
serves, when it started, its running chats and when it last said so (its heartbeat in
Redis; a process alone lists itself). A Redis that does not answer is a 503 in words.
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


def _row(record: NodeRecord) -> dict[str, object]:
    return {"node": record.node, "address": record.address, "started": _when(record.started),
            "runs": record.runs, "seen": _when(record.seen)}  # fmt: skip


@cluster_pages.get("/api/cluster")
def cluster_view() -> Response | tuple[Response, int]:
    this = node()
    try:
        nodes = this.nodes()
    except NodesUnknown as exc:  # logged where Redis failed (cluster/redis_node.py)
        return error(str(exc), 503)
    return jsonify({"cluster": this.config.enabled, "node": this.config.node_id,
                    "nodes": [_row(record) for record in nodes]})  # fmt: skip
