"""Two real run_ui.py nodes of one cluster: one real redis-server, one shared usr/ folder,
each node with its own id and port (issue 36's first slice).

Each names itself in /health, either lists both, a page connected to one hears what the
other sends to every page, and a node killed without a word leaves the list once its
heartbeat expires. The nodes are shared by the module's tests; the last one kills node B.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests

from cluster.redis_node import socketio_channel
from tests.support.agents import wait_for
from tests.support.live_web import ack, as_host, close_socket, live_server, open_socket
from tests.support.redis_server import RedisServer
from tests.support.server_process import ServerProcess

API_KEY = "k-cluster-nodes-0123456789"
#: Seconds a node's heartbeat lives (renewed every third): short, so a dead node leaves soon.
TTL = 3.0


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, _fake_llm_server, redis_server: RedisServer
          ) -> Iterator[tuple[ServerProcess, ServerProcess]]:  # fmt: skip
    """Node A, then node B (A made the shared folder's first files), on one Redis."""
    redis_server.client().flushdb()  # the session's Redis: nothing of another test's
    usr = tmp_path_factory.mktemp("cluster") / "usr"
    usr.mkdir()
    started: list[ServerProcess] = []
    try:
        for name in ("node-a", "node-b"):
            started.append(live_server(
                tmp_path_factory.mktemp(name), _fake_llm_server.base_url, api_key=API_KEY,
                usr_dir=str(usr), redis_url=redis_server.url, node_id=name, node_ttl=str(TTL),
            ))  # fmt: skip
        assert started[0].usr_dir == started[1].usr_dir == usr
        yield started[0], started[1]
    finally:
        for server in started:
            server.stop()


def get(server: ServerProcess, path: str) -> dict:
    answer = requests.get(server.url + path, timeout=10)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def listed(server: ServerProcess) -> list[str]:
    return [row["node"] for row in get(server, "/api/cluster")["nodes"]]


def test_each_node_names_itself_and_its_redis_in_health(nodes):
    a, b = nodes
    assert {k: get(a, "/health")[k] for k in ("status", "node", "redis")} == {
        "status": "ok", "node": "node-a", "redis": "ok"}  # fmt: skip
    assert {k: get(b, "/health")[k] for k in ("status", "node", "redis")} == {
        "status": "ok", "node": "node-b", "redis": "ok"}  # fmt: skip


def test_either_node_lists_both(nodes):
    a, b = nodes
    for server, itself in ((a, "node-a"), (b, "node-b")):
        view = get(server, "/api/cluster")
        assert view["cluster"] is True and view["node"] == itself
        rows = {row["node"]: row for row in view["nodes"]}
        assert list(rows) == ["node-a", "node-b"]
        assert rows["node-a"]["address"] == f"127.0.0.1:{a.port}"
        assert rows["node-b"]["address"] == f"127.0.0.1:{b.port}"
        assert rows["node-a"]["runs"] == rows["node-b"]["runs"] == 0


def test_a_page_on_node_b_hears_of_a_chat_made_on_node_a(nodes, redis_server):
    """The chat list's news goes to every page (the desktop mode: no accounts), through
    Redis: node B sends it to its page though the chat is node A's."""
    a, b = nodes
    on_b = open_socket(b, as_host(b, "127.0.0.1"))
    on_a = open_socket(a, as_host(a, "127.0.0.1"))
    heard: list[dict] = []
    on_b.on("chats:delta", heard.append)
    try:
        # Each node listens on the cluster's channel once a page connected to it.
        channel = socketio_channel(redis_server.url)
        wait_for(lambda: redis_server.client().pubsub_numsub(channel) == [(channel, 2)],
                 timeout=10, what="both nodes listening on Redis")  # fmt: skip
        made = ack(on_a, "chat:new")
        assert made["ok"], made
        chat_id = made["chat"]["id"]
        wait_for(lambda: any(d["chat"]["id"] == chat_id for d in heard), timeout=10,
                 what="node A's chat announced to the page on node B")  # fmt: skip
        time.sleep(0.3)  # a second copy would come as soon
        news = [d for d in heard if d["chat"]["id"] == chat_id]
        assert [d["kind"] for d in news] == ["added"]  # once, not once per node
    finally:
        close_socket(on_a)
        close_socket(on_b)


def test_a_node_killed_without_a_word_leaves_the_list_when_its_heartbeat_expires(nodes):
    """Last: node B is killed (SIGKILL: no goodbye; its gunicorn worker dies with it)."""
    a, b = nodes
    # Both listed (on a loaded machine a heartbeat may come late: its node is back within
    # a beat), then B killed.
    wait_for(lambda: listed(a) == ["node-a", "node-b"], timeout=TTL * 2, what="both listed")
    b.kill()
    killed = time.monotonic()
    assert listed(a) == ["node-a", "node-b"]  # its key lives on until it expires
    wait_for(lambda: listed(a) == ["node-a"], timeout=TTL + 5, what="node B leaving the list")
    gone_after = time.monotonic() - killed
    assert gone_after <= TTL + 1.0, gone_after
    assert get(a, "/health")["redis"] == "ok"
