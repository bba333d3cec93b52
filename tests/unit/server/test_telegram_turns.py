"""Which node of a cluster polls Telegram (server/apis/telegram/turns.py): one at a time,
the same one while it lives, another once it is gone; against a real redis-server, two
`RedisNode`s of one Redis in this process (what they share is Redis alone)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from cluster.config import ClusterConfig, cluster_config
from cluster.node import Alone, Node, node_for
from server.apis.telegram.turns import Turns
from tests.support.agents import wait_for
from tests.support.redis_server import RedisServer

#: Short turns, so that a test sees several.
TURN = 0.4


@pytest.fixture
def cluster(redis_server: RedisServer) -> Iterator[Callable[[str], Node]]:
    redis_server.client().flushall()
    made: list[Node] = []

    def node(name: str) -> Node:
        config = cluster_config({"CADRE_REDIS_URL": redis_server.url, "CADRE_NODE_ID": name})
        made.append(node_for(config, "127.0.0.1:5080"))
        return made[-1]

    yield node
    for each in made:
        each.stop()


def test_one_node_polls_and_keeps_its_turns_while_it_lives(cluster):
    a, b = Turns(cluster("node-a"), TURN), Turns(cluster("node-b"), TURN)
    first = wait_for(lambda: a.mine() or b.mine(), what="a poller")
    poller, other = (a, b) if a.mine() else (b, a)
    assert first and not other.mine()
    # The poller asks as it polls (a long poll never outlasts its turns): the next turn is
    # claimed before it begins, so the other node never gets one.
    seen: set[int] = set()
    while len(seen) < 3:  # three turns, each looked at several times, all the poller's
        assert poller.mine() and not other.mine()
        assert poller.poll_seconds(25.0) <= 2 * TURN
        seen.add(int(time.time() // TURN))
        time.sleep(TURN / 8)  # how often a poller asks: each of its long polls


def test_another_node_polls_once_the_poller_is_gone(cluster):
    a, b = Turns(cluster("node-a"), TURN), Turns(cluster("node-b"), TURN)
    assert wait_for(a.mine, what="node-a's turn")
    assert not b.mine()
    # node-a asks no more (it died): node-b gets a turn once node-a's claims run out.
    assert wait_for(b.mine, timeout=10 * TURN, what="node-b's turn")


def test_a_process_alone_always_polls():
    assert Turns(None).mine() and Turns(Alone(ClusterConfig(), "127.0.0.1:5080")).mine()
    assert Turns(None).poll_seconds(25.0) == 25.0
