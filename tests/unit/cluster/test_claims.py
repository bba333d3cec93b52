"""Claims and shared locks across a cluster (cluster/claims.py), and whether another live node
started before a moment, against a real redis-server; and what a process alone does instead
(cluster/node.py `Alone`).

Two nodes are two `RedisNode`s of one Redis in this process: what they share is Redis
alone, as two machines would. Their heartbeats are not started (nothing here needs them).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

import pytest

from cluster.config import ClusterConfig, cluster_config
from cluster.node import Alone, ClusterUnavailable, Node, node_for
from helpers.errors import Unavailable
from tests.support.agents import wait_for
from tests.support.redis_server import RedisServer
from tests.support.server_process import free_port


@pytest.fixture
def cluster(redis_server: RedisServer) -> Iterator[Callable[..., Node]]:
    """Makes nodes of the session's Redis (database `db`), emptied for the test."""
    redis_server.client().flushall()
    made: list[Node] = []

    def node(name: str, db: int = 0, url: str = "") -> Node:
        url = url or redis_server.url.rsplit("/", 1)[0] + f"/{db}"
        made.append(node_for(cluster_config({"CADRE_REDIS_URL": url, "CADRE_NODE_ID": name}),
                             "127.0.0.1:5080"))  # fmt: skip
        return made[-1]

    yield node
    for each in made:
        each.stop()


def test_the_first_asker_gets_a_claim_until_it_expires(cluster, redis_server):
    a, b = cluster("node-a"), cluster("node-b")
    assert a.claim("fire:t1:2026-01-01T09:00:00+00:00", ttl=0.3) is True
    assert b.claim("fire:t1:2026-01-01T09:00:00+00:00", ttl=0.3) is False
    assert a.claim("fire:t1:2026-01-01T09:00:00+00:00", ttl=0.3) is False  # its own, too
    assert b.claim("fire:t1:2026-01-01T10:00:00+00:00", ttl=0.3) is True  # another key
    # In the URL's database, under cadre:, naming the node that holds it.
    assert redis_server.client().get("cadre:claim:fire:t1:2026-01-01T09:00:00+00:00") == "node-a"
    wait_for(lambda: b.claim("fire:t1:2026-01-01T09:00:00+00:00", ttl=30), timeout=5,
             what="the claim's expiry")  # fmt: skip
    assert a.claim("fire:t1:2026-01-01T09:00:00+00:00", ttl=30) is False


def test_each_database_is_a_cluster_of_its_own(cluster, redis_server):
    assert cluster("node-a", db=0).claim("fire:t1:x", ttl=30) is True
    assert cluster("node-a", db=1).claim("fire:t1:x", ttl=30) is True
    assert cluster("node-b", db=1).claim("fire:t1:x", ttl=30) is False
    # Db 0's alone (the claims only: a cluster of the session's servers may take its
    # locks in db 0 meanwhile; one did once in a full run).
    assert redis_server.client().keys("cadre:claim:*") == ["cadre:claim:fire:t1:x"]


def test_a_shared_lock_keeps_another_node_out_until_it_is_released(cluster, redis_server):
    a, b = cluster("node-a"), cluster("node-b")
    with a.shared_lock("tasks", timeout=5):
        assert redis_server.client().get("cadre:lock:tasks").startswith("node-a:")
        with pytest.raises(ClusterUnavailable) as refused, b.shared_lock("tasks", timeout=0.2):
            pytest.fail("node B entered while node A held the lock")
        with b.shared_lock("other", timeout=0.2):  # another name: another lock
            pass
    assert "the cluster's lock 'tasks'" in str(refused.value)
    assert "was not got within 0.2 s: another node holds it" in str(refused.value)
    assert isinstance(refused.value, Unavailable)  # what the scheduler and the routes catch
    with b.shared_lock("tasks", timeout=0.2):  # released: B gets it at once
        assert redis_server.client().get("cadre:lock:tasks").startswith("node-b:")
    assert redis_server.client().get("cadre:lock:tasks") is None


def test_a_read_modify_write_under_the_lock_loses_nothing(cluster, redis_server):
    """Two nodes, two threads each, add one to a number in Redis by reading it and writing
    it back: without the lock, writes in between would be lost."""
    nodes = [cluster("node-a"), cluster("node-b")]
    store = redis_server.client()
    store.set("count", 0)
    go = threading.Barrier(4)

    def add(node: Node) -> None:
        go.wait(10)
        for _ in range(25):
            with node.shared_lock("count", timeout=10):
                store.set("count", int(store.get("count")) + 1)

    workers = [threading.Thread(target=add, args=(n,)) for n in nodes for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert store.get("count") == "100"


def test_a_lock_its_holder_kept_past_its_timeout_frees_itself(cluster, redis_server, caplog):
    """A holder that dies (here: one that holds on too long) frees the lock when it expires;
    its late release says so in the log, and takes nothing from the next holder."""
    a, b = cluster("node-a"), cluster("node-b")
    held = a.shared_lock("tasks", timeout=0.3)
    held.__enter__()
    with b.shared_lock("tasks", timeout=5):  # waits for the expiry
        with caplog.at_level(logging.ERROR):
            held.__exit__(None, None, None)
        assert "held longer than its 0.3 s and expired before its release" in caplog.text
        assert redis_server.client().get("cadre:lock:tasks").startswith("node-b:")


def test_a_lock_is_released_when_its_block_raises(cluster, redis_server):
    a = cluster("node-a")
    with pytest.raises(ZeroDivisionError), a.shared_lock("tasks"):
        1 / 0  # noqa: B018
    assert redis_server.client().get("cadre:lock:tasks") is None


def test_a_redis_that_does_not_answer_is_said_in_words(cluster):
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    lonely = cluster("node-a", url=url)
    with pytest.raises(ClusterUnavailable) as claimed:
        lonely.claim("fire:t1:x", ttl=30)
    with pytest.raises(ClusterUnavailable) as locked, lonely.shared_lock("tasks", timeout=1):
        pytest.fail("a lock got without Redis")
    for refused, what in ((claimed, "the claim 'fire:t1:x'"),
                          (locked, "the cluster's lock 'tasks'")):  # fmt: skip
        words = str(refused.value)
        assert words.startswith(f"Redis at {url} does not answer (")
        assert f"{what} cannot be" in words
        assert words.endswith("Check that Redis runs and that this node reaches it")


def test_another_node_alive_since_a_moment_is_one_listed_that_started_before_it(cluster):
    a, b = cluster("node-a"), cluster("node-b")
    a.start(lambda: 0)  # listed from now on
    assert b.another_alive_since(a.started + 1) is True  # a may have begun something then
    assert b.another_alive_since(a.started - 1) is False  # a was not there yet
    assert a.another_alive_since(a.started + 1) is False  # itself is no other node
    a.stop()  # leaves the list
    assert b.another_alive_since(a.started + 1) is False


def test_the_live_nodes_unknown_is_said_in_words(cluster):
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    with pytest.raises(ClusterUnavailable, match=f"^Redis at {url} does not answer"):
        cluster("node-a", url=url).another_alive_since(0.0)


def test_a_process_alone_grants_every_claim_and_locks_among_its_threads():
    alone = Alone(ClusterConfig(), "127.0.0.1:5080")
    assert alone.another_alive_since(float("inf")) is False  # no other node
    assert alone.claim("fire:t1:x", ttl=30) is True
    assert alone.claim("fire:t1:x", ttl=30) is True  # no other node could have asked
    outside: list[str] = []

    def try_to_enter(name: str) -> None:
        try:
            with alone.shared_lock(name, timeout=0.1):
                outside.append(f"{name}: entered")
        except ClusterUnavailable as exc:
            outside.append(f"{name}: {exc}")

    with alone.shared_lock("tasks"):
        for name in ("tasks", "other"):
            thread = threading.Thread(target=try_to_enter, args=(name,))
            thread.start()
            thread.join(10)
    assert outside[0].startswith("tasks: the lock 'tasks' was not got within 0.1 s")
    assert outside[1] == "other: entered"
    try_to_enter("tasks")  # released
    assert outside[2] == "tasks: entered"
