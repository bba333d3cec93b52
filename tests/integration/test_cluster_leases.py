"""Leases on chats, the run queue and the signed hand-over between nodes, on a real
redis-server (cluster/leases.py, cluster/run_queue.py, cluster/relay_auth.py).

One owner per chat however many nodes ask at once; a lease renewed only by its holder, and
found an orphan once it expires; runs taken from the queue by the nodes that have room,
spread evenly, never by a node at its limit; a relay header that is forged, changed, old
or replayed is refused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

from cluster.leases import Leases, lease_key
from cluster.relay_auth import BadRelay, new_secret, sign, verify
from cluster.run_queue import NoRoom, RunQueue
from tests.support.agents import wait_for
from tests.support.redis_server import RedisServer


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    found = redis.Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=15)
    found.flushdb()
    yield found
    found.flushdb()
    found.close()


def test_one_node_gets_a_chats_lease_however_many_ask_at_once(client):
    nodes = [Leases(client, f"node-{n}", ttl=5) for n in range(8)]
    answers: list[str] = []
    start = threading.Barrier(len(nodes))

    def ask(leases: Leases) -> None:
        start.wait()
        answers.append(leases.take("chat-1"))

    threads = [threading.Thread(target=ask, args=(leases,)) for leases in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(answers)) == 1  # every node heard the same owner
    assert client.get(lease_key("chat-1")) == answers[0]
    assert nodes[0].listed() == {"chat-1": answers[0]}


def test_only_the_holder_renews_or_gives_up_a_lease(client):
    a, b = Leases(client, "a", ttl=5), Leases(client, "b", ttl=5)
    assert a.take("chat") == "a"
    assert b.take("chat") == "a"  # held: b hears who holds it
    assert b.renew(["chat"]) == ["chat"]  # not b's to renew
    b.release("chat")  # nor to give up
    assert a.holder("chat") == "a"
    assert a.renew(["chat"]) == []
    assert client.pttl(lease_key("chat")) > 4000
    a.release("chat")
    assert a.holder("chat") is None and a.listed() == {}
    assert b.take("chat") == "b"


def test_a_lease_that_expires_leaves_its_chat_an_orphan_for_another_node(client):
    dying = Leases(client, "dying", ttl=0.3)
    assert dying.take("chat") == "dying"
    assert dying.orphans() == {}
    wait_for(lambda: dying.holder("chat") is None, timeout=5, what="the lease expiring")
    survivor = Leases(client, "survivor", ttl=5)
    assert survivor.orphans() == {"chat": "dying"}
    assert survivor.take("chat") == "survivor"
    assert survivor.orphans() == {}
    # The node that stalled learns it lost the chat; it cannot take it back by renewing.
    assert dying.renew(["chat"]) == ["chat"]
    assert survivor.holder("chat") == "survivor"


def test_a_lease_redis_lost_is_taken_again_by_its_holder(client):
    """Redis restarted without its data: the node still running the chat keeps it."""
    leases = Leases(client, "a", ttl=5)
    assert leases.take("chat") == "a"
    client.flushdb()
    assert leases.renew(["chat"]) == []
    assert leases.holder("chat") == "a" and leases.listed() == {"chat": "a"}
    assert Leases(client, "b", ttl=5).take("chat") == "a"


def _queue(client: redis.Redis, redis_server: RedisServer, node: str) -> RunQueue:
    blocking = redis.Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=15)
    return RunQueue(client, blocking, Leases(client, node, ttl=5), node)


def test_runs_go_to_the_nodes_with_room_evenly_and_a_full_node_takes_none(client, redis_server):
    runs = {"a": 0, "b": 0, "c": 0}
    limits = {"a": 50, "b": 50, "c": 0}  # c is full: it takes nothing
    taken: dict[str, list[str]] = {name: [] for name in runs}
    lock = threading.Lock()
    queues = {name: _queue(client, redis_server, name) for name in runs}

    def took(name: str, chat_id: str) -> None:
        with lock:
            taken[name].append(chat_id)
            runs[name] += 1  # it runs now: the node reads a little later next time

    for name, queue in queues.items():
        queue.start(lambda n=name: runs[n], limits[name], lambda chat, n=name: took(n, chat))
    asker = _queue(client, redis_server, "asker")
    try:
        owners = [asker.offer(f"chat-{i}", wait=10) for i in range(30)]
    finally:
        for queue in queues.values():
            queue.stop()
    assert taken["c"] == []
    assert sorted(taken["a"] + taken["b"]) == sorted(f"chat-{i}" for i in range(30))
    assert abs(len(taken["a"]) - len(taken["b"])) <= 6, taken  # spread, not piled on one
    for i, owner in enumerate(owners):
        assert client.get(lease_key(f"chat-{i}")) == owner


def test_a_node_at_its_limit_takes_no_second_new_chat_before_the_first_one_starts(
    client, redis_server
):
    """A new chat's run (no lease yet) taken from the queue counts against the node's limit
    from the moment it is taken: its request is still on its way, so the node runs nothing
    yet, and without that count it took a second run past its limit of one."""
    from cluster.config import ClusterConfig
    from cluster.redis_runs import RedisRuns

    blocking = redis.Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=15)
    node = RedisRuns(ClusterConfig(redis_server.url, "solo", ttl=5), client, blocking, limit=1)
    node.start(lambda: 0, lambda _chat: False, lambda _chat, _former: None, lambda _chat: None)
    asker = _queue(client, redis_server, "asker")
    try:
        assert asker.offer(None, wait=10) == "solo"
        with pytest.raises(NoRoom):  # the only node is full: nobody takes it
            asker.offer(None, wait=1.5)
        assert node.take("chat-new") == "solo"  # the first one's run starts there
    finally:
        node.queue.stop()


def test_a_run_nobody_takes_is_said_in_time(client, redis_server):
    asker = _queue(client, redis_server, "asker")
    asker.ensure_group()
    began = time.monotonic()
    with pytest.raises(NoRoom):
        asker.offer("lonely", wait=0.5)
    assert time.monotonic() - began < 5


def test_a_relay_header_is_believed_only_as_a_peer_signed_it():
    secret = new_secret()
    value = sign(secret, "node-a", "POST", "/api/v1/message", "ada", b'{"message": "hi"}')
    said = verify(secret, value, "POST", "/api/v1/message", b'{"message": "hi"}')
    assert (said.node, said.user) == ("node-a", "ada")
    for method, target, body, key in (
        ("POST", "/api/v1/message", b'{"message": "rm -rf"}', secret),  # another body
        ("POST", "/api/v1/chats/x/stop", b'{"message": "hi"}', secret),  # another path
        ("GET", "/api/v1/message", b'{"message": "hi"}', secret),  # another method
        ("POST", "/api/v1/message", b'{"message": "hi"}', new_secret()),  # not our secret
    ):
        with pytest.raises(BadRelay):
            verify(key, value, method, target, body)
    forged = value.rsplit(";", 1)[0] + ";" + "0" * 64
    with pytest.raises(BadRelay, match="signature"):
        verify(secret, forged, "POST", "/api/v1/message", b'{"message": "hi"}')
    old = sign(secret, "node-a", "GET", "/x", "", b"", now=time.time() - 120)
    with pytest.raises(BadRelay, match="too old"):
        verify(secret, old, "GET", "/x", b"")
    with pytest.raises(BadRelay, match="malformed"):
        verify(secret, "not;a;header", "GET", "/x", b"")


def test_a_node_that_stalled_past_its_lease_may_not_write_the_chat_another_took(
        client, redis_server):  # fmt: skip
    """The write fence (cluster/redis_runs.py `may_write`): while its lease was renewed
    lately, a node writes without asking Redis; after a stall longer than the lease, it
    asks, learns another node took the chat over, writes nothing more and lets it go."""
    from cluster.config import ClusterConfig
    from cluster.redis_runs import RedisRuns

    blocking = redis.Redis.from_url(redis_server.url, decode_responses=True)
    let_go: list[str] = []
    slow = RedisRuns(ClusterConfig(redis_server.url, "slow", ttl=0.6), client, blocking)
    slow._let_go = let_go.append
    assert slow.take("chat") == "slow"
    assert slow.may_write("chat") and slow.may_write("an idle chat it does not hold")
    time.sleep(0.7)  # the node stalls: no heartbeat renews; its lease expires
    assert Leases(client, "quick", ttl=5).take("chat") == "quick"  # taken over
    assert slow.may_write("chat") is False
    wait_for(lambda: let_go == ["chat"], timeout=5, what="the slow node letting it go")
    assert slow.may_write("chat") is False or slow.holds("chat") is False
    assert client.get(lease_key("chat")) == "quick"


def test_a_stalled_node_whose_lease_nobody_took_takes_it_again_and_writes(client, redis_server):
    from cluster.config import ClusterConfig
    from cluster.redis_runs import RedisRuns

    blocking = redis.Redis.from_url(redis_server.url, decode_responses=True)
    slow = RedisRuns(ClusterConfig(redis_server.url, "slow", ttl=0.6), client, blocking)
    assert slow.take("chat") == "slow"
    time.sleep(0.7)
    assert client.get(lease_key("chat")) is None  # expired, nobody took it
    assert slow.may_write("chat") is True
    assert client.get(lease_key("chat")) == "slow"


def test_a_chat_taken_over_with_nothing_to_run_is_let_go_at_the_next_heartbeat(
        client, redis_server):  # fmt: skip
    """A chat left on the runs list past its lease (a node that stalled, or a run that
    ended as its lease lapsed) is taken over; when the takeover finds nothing to run, its
    lease was kept 30 s all the same (a test of a frozen node waited for it in vain)."""
    from cluster.config import ClusterConfig
    from cluster.redis_runs import RedisRuns

    Leases(client, "gone", ttl=0.3).take("chat")
    wait_for(lambda: client.get(lease_key("chat")) is None, timeout=5, what="the lease lapsing")
    blocking = redis.Redis.from_url(redis_server.url, decode_responses=True)
    survivor = RedisRuns(ClusterConfig(redis_server.url, "survivor", ttl=5), client, blocking)
    looked: list[str] = []
    survivor._take_over = lambda chat_id, former: looked.append(f"{chat_id} of {former}")
    survivor._runs_here = lambda chat_id: False  # it finds the run ended: nothing to take
    survivor.keep()  # a heartbeat: the orphan taken over
    wait_for(lambda: looked == ["chat of gone"], timeout=5, what="the takeover")
    wait_for(lambda: not survivor._taking, timeout=5, what="the takeover's end")
    assert client.get(lease_key("chat")) == "survivor"
    survivor.keep()  # the next heartbeat
    assert client.get(lease_key("chat")) is None and not survivor.holds("chat")
