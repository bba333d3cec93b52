"""The usage ledger shared by the nodes of a cluster (accounts/usage.py): each node writes what
it counted onto the totals of the file as they are then, under the cluster's lock `usage`,
so two nodes counting in the same second both count; and each node's answers include what
the others wrote. A ledger alone never looks at the file between its own writes.

Two ledgers on one file stand for two nodes, each given a node of the real Redis
(tests/support/redis_nodes.py).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from accounts.usage import Spent, UsageLedger
from tests.support.redis_nodes import Nodes, redis_nodes
from tests.support.redis_server import RedisServer


@pytest.fixture
def nodes(redis_server: RedisServer) -> Iterator[Nodes]:
    with redis_nodes(redis_server) as made:
        yield made


def on_disk(path: Path, user: str) -> int:
    days = json.loads(path.read_text())["days"]
    return sum(users[user]["prompt_tokens"] for users in days.values() if user in users)


def test_what_two_nodes_count_in_the_same_second_adds_up(tmp_path, nodes):
    path = tmp_path / "usage.json"
    a = UsageLedger(path, shared=nodes("node-a"))
    b = UsageLedger(path, shared=nodes("node-b"))
    a.add("ann", Spent(100, 10, 1, 0.01))
    b.add("ann", Spent(200, 20, 1, 0.02))  # neither written yet: both write within DELAY
    a.flush()
    b.flush()
    assert on_disk(path, "ann") == 300
    assert a.today("ann") == b.today("ann") == Spent(300, 30, 2, 0.03)


def test_many_threads_on_two_nodes_counting_and_writing_at_once_lose_nothing(tmp_path, nodes):
    path = tmp_path / "usage.json"
    ledgers = [UsageLedger(path, shared=nodes("node-a")),
               UsageLedger(path, shared=nodes("node-b"))]  # fmt: skip
    go = threading.Barrier(6)

    def count(ledger: UsageLedger) -> None:
        go.wait(10)
        for number in range(200):
            ledger.add("ann", Spent(1, 0, 1, 0.0))
            if number % 20 == 0:
                ledger.flush()  # writes while the other node counts and writes

    threads = [threading.Thread(target=count, args=(ledgers[n % 2],)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for ledger in ledgers:
        ledger.close()
    assert on_disk(path, "ann") == 1200
    assert [ledger.today("ann").calls for ledger in ledgers] == [1200, 1200]


def test_a_node_answers_with_what_another_wrote_at_once(tmp_path, nodes):
    path = tmp_path / "usage.json"
    a = UsageLedger(path, shared=nodes("node-a"))
    b = UsageLedger(path, shared=nodes("node-b"))
    assert b.today("ann") == Spent() and b.users() == set()
    a.add("ann", Spent(5, 1, 1, 0.0))
    assert b.today("ann") == Spent()  # not written yet (within DELAY): B cannot know
    a.flush()
    assert b.today("ann") == Spent(5, 1, 1, 0.0)
    assert b.users() == {"ann"} and list(b.window("ann")) == list(a.window("ann"))


def test_without_redis_the_usage_is_kept_and_written_once_it_can_be(tmp_path, nodes, caplog):
    path = tmp_path / "usage.json"
    ledger = UsageLedger(path, shared=nodes.unreachable("node-a"))
    ledger.add("ann", Spent(7, 0, 1, 0.0))
    with caplog.at_level(logging.ERROR):
        ledger.flush()
    assert "could not save the usage ledger" in caplog.text and "does not answer" in caplog.text
    assert not path.exists()
    ledger.add("ann", Spent(3, 0, 1, 0.0))
    assert ledger.today("ann").prompt_tokens == 10  # still counted: limits hold
    ledger.shared = nodes("node-a")  # Redis answers again
    ledger.close()
    assert on_disk(path, "ann") == 10


def test_a_ledger_alone_never_looks_at_the_file_between_its_writes(tmp_path):
    """The desktop mode's cost as it was: a file written by hand meanwhile is not read."""
    path = tmp_path / "usage.json"
    mine, other = UsageLedger(path), UsageLedger(path)
    other.add("ann", Spent(5, 0, 1, 0.0))
    other.flush()
    assert mine.today("ann") == Spent()
