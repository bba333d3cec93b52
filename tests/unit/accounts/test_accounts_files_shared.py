"""The accounts' files shared by the nodes of a cluster (accounts/stored_file.py): users.json,
api_keys.json and invites.json changed under the cluster's lock of each file, and read
again by every node as soon as another changed them.

Two stores on one file stand for two nodes; each is given a node of the real Redis
(tests/support/redis_nodes.py), whose locks they take.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from accounts.invites import Invites
from accounts.keys import Keys
from accounts.passwords import hash_password
from accounts.users import Users
from helpers.errors import Unavailable
from helpers.files import usr_path
from tests.support.redis_nodes import Nodes, redis_nodes
from tests.support.redis_server import RedisServer

HASH = hash_password("a long password")


@pytest.fixture
def nodes(redis_server: RedisServer) -> Iterator[Nodes]:
    with redis_nodes(redis_server) as made:
        yield made


def at_once(*work: Callable[[], None]) -> None:
    go = threading.Barrier(len(work))
    failed: list[BaseException] = []

    def run(job: Callable[[], None]) -> None:
        go.wait(10)
        try:
            job()
        except BaseException as exc:  # said by the test below
            failed.append(exc)

    threads = [threading.Thread(target=run, args=(job,)) for job in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failed == []


def test_users_made_on_two_nodes_at_once_are_all_kept_and_known_to_both(nodes):
    a, b = Users(shared=nodes("node-a")), Users(shared=nodes("node-b"))
    a.add("root", "admin", HASH)
    assert b.get("root") is not None  # made on A: known to B at once

    def make(users: Users, prefix: str) -> Callable[[], None]:
        return lambda: [users.add(f"{prefix}{n}", "member", HASH) for n in range(8)]

    at_once(make(a, "a"), make(b, "b"), make(a, "c"), make(b, "d"))
    names = {"root"} | {f"{p}{n}" for p in "abcd" for n in range(8)}
    assert {u.name for u in a.all()} == {u.name for u in b.all()} == names


def test_a_change_that_keeps_the_files_size_is_seen_by_the_other_node(nodes):
    """A new password's hash is as long as the old one: the file's size stays, and two
    writes within one tick of the file system's clock share a modification time; the inode
    tells them apart."""
    a, b = Users(shared=nodes("node-a")), Users(shared=nodes("node-b"))
    a.add("root", "admin", HASH)
    new_hash = hash_password("another long password")  # hashed first: the writes come quick
    for _ in range(5):
        before = a.add("ann", "member", HASH)
        assert b.get("ann") == before
        size = usr_path("users.json").stat().st_size
        changed = a.update("ann", password=new_hash)
        assert usr_path("users.json").stat().st_size == size
        assert b.get("ann") == changed != before
        a.remove("ann")


def test_a_change_waits_for_the_clusters_lock_of_the_file(nodes):
    a, other = nodes("node-a"), nodes("node-b")
    users = Users(shared=a)
    with other.shared_lock("users"):  # another node's change going on
        writer = threading.Thread(target=lambda: users.add("root", "admin", HASH))
        writer.start()
        writer.join(0.3)
        assert writer.is_alive() and not usr_path("users.json").exists()
    writer.join(10)
    assert users.get("root") is not None


def test_without_redis_nothing_is_changed_and_the_words_say_why(nodes):
    users = Users(shared=nodes.unreachable("node-a"))
    with pytest.raises(Unavailable, match="does not answer"):
        users.add("root", "admin", HASH)
    assert not usr_path("users.json").exists()


def test_a_key_made_on_one_node_works_on_the_other_and_its_revocation_too(nodes):
    a, b = Keys(shared=nodes("node-a")), Keys(shared=nodes("node-b"))
    made, key = a.make("ann", "cli")
    assert b.owner_of(key) == "ann"
    at_once(lambda: a.make("ann", "one"), lambda: b.make("bob", "two"))
    assert sorted(k.label for k in a.of("ann")) == sorted(k.label for k in b.of("ann"))
    assert [k.label for k in b.of("bob")] == ["two"]
    assert b.revoke(made.id) == made
    assert a.owner_of(key) is None


def test_invites_made_on_two_nodes_at_once_are_all_kept_and_taken_once(nodes):
    a, b = Invites(shared=nodes("node-a")), Invites(shared=nodes("node-b"))
    tokens: dict[str, str] = {}

    def invite(invites: Invites, name: str) -> Callable[[], None]:
        return lambda: tokens.__setitem__(name, invites.make(name)[0])

    at_once(*(invite(a if n % 2 else b, f"guest{n}") for n in range(6)))
    assert a.pending() == b.pending() == {f"guest{n}" for n in range(6)}
    taken: list[str | None] = []
    at_once(lambda: taken.append(a.take(tokens["guest0"])),
            lambda: taken.append(b.take(tokens["guest0"])))  # fmt: skip
    assert sorted(taken, key=str) == [None, "guest0"]
