"""The cluster as /health and the admins see it, in one process (server/routes/cluster.py):
a process alone lists itself and its /health is as it was; a node whose Redis does not
answer says so, in /health and in words (a 503), and is listed again once Redis is back."""

from __future__ import annotations

import logging

import pytest

from cluster.config import cluster_config, default_node_id
from cluster.node import node_for
from initialize import ChatFactory
from server.app import create_app
from store.chats import ChatManager
from tests.support.agents import wait_for
from tests.support.redis_server import RedisServer, installed


def test_a_process_alone_lists_itself_and_its_health_is_as_before(http):
    view = http.get("/api/cluster")
    assert view.status_code == 200
    assert view.json["cluster"] is False and view.json["node"] == default_node_id()
    [row] = view.json["nodes"]
    assert (row["node"], row["address"], row["runs"]) == (default_node_id(), "127.0.0.1:5080", 0)
    assert set(http.get("/health").json) == {"status", "ready", "chats"}


@pytest.mark.skipif(not installed(), reason="redis-server is not installed")
def test_a_node_says_when_its_redis_does_not_answer_and_when_it_is_back(
    llm, runtime, tmp_path, caplog
):
    redis = RedisServer(tmp_path / "redis")
    redis.start().stop()  # its port, with nothing listening there yet
    config = cluster_config({"CADRE_REDIS_URL": redis.url, "CADRE_NODE_ID": "lonely-1",
                             "CADRE_NODE_TTL": "1"})  # fmt: skip
    chats = ChatManager(runtime, ChatFactory(runtime))
    chats.load_saved()
    node = node_for(config, "127.0.0.1:5080")
    built = create_app(chats, node=node)
    try:
        with caplog.at_level(logging.INFO):
            node.start(lambda: 0)
            client = built.app.test_client()
            health = client.get("/health").json
            assert (health["node"], health["redis"], health["status"]) == (
                "lonely-1", "unreachable", "ok")  # fmt: skip
            refused = client.get("/api/cluster")
            assert refused.status_code == 503
            assert refused.json["error"].startswith(f"Redis at {redis.url} does not answer")
            assert "Check that Redis runs and that this node reaches it" in refused.json["error"]
            assert f"Redis at {redis.url} does not answer" in caplog.text  # the log has it

            redis.start()  # back, on the same address
            wait_for(lambda: client.get("/health").json["redis"] == "ok", timeout=10,
                     what="the heartbeat reaching Redis again")  # fmt: skip
            assert f"Redis at {redis.url} answers again" in caplog.text
            [row] = client.get("/api/cluster").json["nodes"]
            assert (row["node"], row["runs"]) == ("lonely-1", 0)
        node.stop()
        assert redis.client().keys("*") == []  # a node that stops leaves the list at once
    finally:
        node.stop()
        built.mcp.stop()
        redis.close()
