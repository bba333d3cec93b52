"""A person's notification history shared by the nodes of a cluster (store/notifications.py,
store/notification_writes.py): their runs end on one node while their page marks entries
read on another. Each node writes its own changes onto the file as it is then, under the
cluster's lock of the file, and reads the file again when another node wrote it.

Two histories on one file stand for two nodes, each given a node of the real Redis
(tests/support/redis_nodes.py).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from store.notification_owners import Notifications
from store.notifications import Change, NotificationHistory
from tests.support.agents import wait_for
from tests.support.redis_nodes import Nodes, redis_nodes
from tests.support.redis_server import RedisServer


@pytest.fixture
def nodes(redis_server: RedisServer) -> Iterator[Nodes]:
    with redis_nodes(redis_server) as made:
        yield made


@pytest.fixture
def two(usr_dir: Path, nodes: Nodes) -> Iterator[tuple[NotificationHistory, NotificationHistory]]:
    path = usr_dir / "notifications.json"
    a = NotificationHistory(path, shared=nodes("node-a"))
    b = NotificationHistory(path, shared=nodes("node-b"))
    yield a, b
    a.close()
    b.close()


def stored(path: Path) -> list[tuple[str, bool]]:
    return [(i["title"], i["read"]) for i in json.loads(path.read_text())["items"]]


def test_an_entry_added_on_one_node_is_listed_on_the_other(two):
    a, b = two
    assert b.items() == []  # B read the history (no file yet)
    a.add("Run finished", chat_id="c1")
    a.flush()
    assert [(i.title, i.chat_id) for i in b.items()] == [("Run finished", "c1")]
    assert b.unread() == 1


def test_changes_made_on_two_nodes_at_once_are_all_kept(two):
    a, b = two
    first = a.add("first")
    a.flush()
    assert b.mark_read([first.id]) == [first.id]  # B marks read while A adds
    a.add("second")
    b.flush()
    a.flush()
    assert stored(a.path) == [("first", True), ("second", False)]
    assert [(i.title, i.read) for i in a.items()] == [("second", False), ("first", True)]
    assert [(i.title, i.read) for i in b.items()] == [("second", False), ("first", True)]


def test_many_threads_on_two_nodes_adding_at_once_lose_nothing(two):
    a, b = two
    go = threading.Barrier(4)

    def add(history: NotificationHistory, who: int) -> None:
        go.wait(10)
        for number in range(15):
            history.add(f"{who}-{number}")

    threads = [threading.Thread(target=add, args=(two[w % 2], w)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    a.flush()
    b.flush()
    expected = {f"{w}-{n}" for w in range(4) for n in range(15)}
    assert {title for title, _ in stored(a.path)} == expected
    assert {i.title for i in a.items()} == {i.title for i in b.items()} == expected


def test_clearing_on_one_node_keeps_what_another_added_unseen(two):
    """The page cleared what it showed; an entry another node added meanwhile, not yet
    written when the page cleared, is news the person has not seen: it stays."""
    a, b = two
    a.add("seen")
    a.flush()
    assert [i.title for i in b.items()] == ["seen"]
    a.add("not seen yet")  # on A, not yet written
    b.clear()
    b.flush()
    a.flush()
    assert stored(a.path) == [("not seen yet", False)]
    assert [i.title for i in b.items()] == ["not seen yet"]


def test_changes_made_elsewhere_are_not_told_to_this_nodes_listeners(two):
    """The node that made a change told every page (through the cluster's message queue)."""
    a, b = two
    heard: list[Change] = []
    b.subscribe(heard.append)
    a.add("on A")
    a.flush()
    assert len(b.items()) == 1 and heard == []


def test_without_redis_the_changes_are_kept_and_written_once_it_can_be(usr_dir, nodes, caplog):
    path = usr_dir / "notifications.json"
    history = NotificationHistory(path, shared=nodes.unreachable("node-a"))
    with caplog.at_level(logging.ERROR):
        history.add("kept")
        wait_for(lambda: "could not save the notification history" in caplog.text, timeout=10,
                 what="the failed write said in the log")  # fmt: skip
    assert not path.exists() and [i.title for i in history.items()] == ["kept"]
    history.shared = nodes("node-a")  # Redis answers again: written at the stop at the latest
    history.close()
    assert stored(path) == [("kept", False)]


def test_each_persons_history_has_the_clusters_lock_of_its_own_file(usr_dir, nodes):
    node = nodes("node-a")
    notifications = Notifications(shared=node)
    book = notifications.of(None)  # the desktop mode's: usr/notifications.json
    with node.shared_lock("notifications:notifications.json"):  # another node writing it
        book.add("waits")
        book.flush(timeout=0.3)
        assert not book.path.exists()
    book.flush()
    assert stored(book.path) == [("waits", False)]
    notifications.close()
