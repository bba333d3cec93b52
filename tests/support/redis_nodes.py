"""Nodes of a cluster in the test's own process: `RedisNode`s of the session's real Redis
(tests/support/redis_server.py), their heartbeats not started. What two of them share is
Redis alone, as two machines would; each node's files are the test's usr/."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cluster.config import cluster_config
from cluster.node import Node, node_for
from tests.support.redis_server import RedisServer
from tests.support.server_process import free_port


class Nodes:
    """Makes nodes of one Redis; each is stopped when the block that made them ends."""

    def __init__(self, redis_server: RedisServer) -> None:
        self.redis_server = redis_server
        self.made: list[Node] = []

    def __call__(self, name: str) -> Node:
        return self._node(name, self.redis_server.url)

    def unreachable(self, name: str) -> Node:
        """A node whose Redis does not answer (nothing listens on its port)."""
        return self._node(name, f"redis://127.0.0.1:{free_port()}/0")

    def _node(self, name: str, url: str) -> Node:
        config = cluster_config({"CADRE_REDIS_URL": url, "CADRE_NODE_ID": name})
        self.made.append(node_for(config, "127.0.0.1:5080"))
        return self.made[-1]


@contextmanager
def redis_nodes(redis_server: RedisServer) -> Iterator[Nodes]:
    """Nodes of the session's Redis, emptied first (nothing of another test's)."""
    redis_server.client().flushall()
    nodes = Nodes(redis_server)
    try:
        yield nodes
    finally:
        for node in nodes.made:
            node.stop()
