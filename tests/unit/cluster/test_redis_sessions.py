"""Login sessions kept in Redis for every node of a cluster (cluster/redis_sessions.py), as the
server's session store uses them (server/security/sessions.py), against the real
redis-server; and a process alone's, in usr/sessions.json.

Two stores over the books of two nodes stand for two nodes (tests/support/redis_nodes.py):
what one starts the other knows, what one ends the other hears of (its sockets of that
session close), and after Redis was away each looks again at the sessions it holds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from cluster.sessions import MAX_AGE, MAX_SESSIONS
from helpers.errors import Unavailable
from server.security.sessions import FileBook, SessionStore, session_key
from tests.support.agents import wait_for
from tests.support.redis_nodes import Nodes, redis_nodes
from tests.support.redis_server import RedisServer

STAMP, NEW_STAMP = "stamp-1", "stamp-2"


@pytest.fixture
def nodes(redis_server: RedisServer) -> Iterator[Nodes]:
    with redis_nodes(redis_server) as made:
        yield made


class Sockets:
    """What a node's page events hold: the sessions of its sockets, and those it closed."""

    def __init__(self, store: SessionStore) -> None:
        self.held: set[str] = set()
        self.closed: set[str] = set()
        self._lock = threading.Lock()
        store.on_end(self._close, lambda: set(self.held))

    def _close(self, ended: set[str]) -> None:
        with self._lock:
            self.closed |= ended & self.held


def store_of(nodes: Nodes, name: str) -> SessionStore:
    book = nodes(name).session_book()
    assert book is not None
    return SessionStore(book)


def test_a_login_on_one_node_is_live_on_the_other(nodes, redis_server):
    a, b = store_of(nodes, "node-a"), store_of(nodes, "node-b")
    sid = a.start(STAMP, "ann")
    assert b.alive(sid, STAMP) and a.alive(sid, STAMP)
    assert not b.alive(sid, NEW_STAMP)  # opened with other credentials than those in force
    assert not b.alive("no such session", STAMP) and not b.alive(None, STAMP)
    # Kept by its hash, never the id itself, and it expires with its age.
    client = redis_server.client()
    assert client.keys("cadre:session:*") == [f"cadre:session:{session_key(sid)}"]
    assert MAX_AGE - 60 < client.ttl(f"cadre:session:{session_key(sid)}") <= MAX_AGE
    assert sid not in str(client.zrange("cadre:sessions:ann", 0, -1))


def test_a_logout_on_one_node_ends_it_on_the_other_and_closes_its_sockets_there(nodes):
    a, b = store_of(nodes, "node-a"), store_of(nodes, "node-b")
    sockets_a, sockets_b = Sockets(a), Sockets(b)
    sid, other = a.start(STAMP, "ann"), a.start(STAMP, "ann")
    sockets_a.held = sockets_b.held = {session_key(sid), session_key(other)}
    a.end(sid)
    assert not b.alive(sid, STAMP) and b.alive(other, STAMP)
    assert sockets_a.closed == {session_key(sid)}  # told at once, on its own node
    wait_for(lambda: sockets_b.closed == {session_key(sid)}, timeout=10,
             what="node B hearing of the logout on node A")  # fmt: skip


def test_a_password_change_keeps_its_session_and_ends_the_others_everywhere(nodes):
    a, b = store_of(nodes, "node-a"), store_of(nodes, "node-b")
    sockets_b = Sockets(b)
    laptop, phone, bobs = a.start(STAMP, "ann"), b.start(STAMP, "ann"), a.start(STAMP, "bob")
    sockets_b.held = {session_key(phone), session_key(bobs)}
    assert a.keep_only(laptop, NEW_STAMP, "ann") is True
    assert b.alive(laptop, NEW_STAMP) and not b.alive(phone, STAMP)
    assert b.alive(bobs, STAMP)  # another person's
    # Ended through node A: node B hears of it over Redis, a moment later (an assertion
    # made at once failed under load).
    wait_for(lambda: sockets_b.closed == {session_key(phone)}, timeout=10,
             what="node B hearing of the sessions ended on node A")  # fmt: skip
    assert a.keep_only("ended or unknown", NEW_STAMP, "ann") is False


def test_a_renamed_first_admin_keeps_their_session_under_the_new_name(nodes):
    a, b = store_of(nodes, "node-a"), store_of(nodes, "node-b")
    sid = a.start(STAMP, "root")
    assert a.keep_only(sid, NEW_STAMP, "boss") is True
    assert b.alive(sid, NEW_STAMP)
    b.end_user("boss")
    assert not a.alive(sid, NEW_STAMP)


def test_an_account_disabled_on_one_node_is_logged_out_on_every_node(nodes):
    a, b = store_of(nodes, "node-a"), store_of(nodes, "node-b")
    sockets_a = Sockets(a)
    mine = [a.start(STAMP, "ann"), b.start(STAMP, "ann")]
    bobs = b.start(STAMP, "bob")
    sockets_a.held = {session_key(s) for s in [*mine, bobs]}
    b.end_user("ann")
    assert not any(a.alive(sid, STAMP) for sid in mine) and a.alive(bobs, STAMP)
    wait_for(lambda: sockets_a.closed == {session_key(s) for s in mine}, timeout=10,
             what="node A hearing of the sessions ended on node B")  # fmt: skip


def test_each_person_keeps_the_newest_sessions_up_to_the_bound(nodes, redis_server):
    store = store_of(nodes, "node-a")
    sockets = Sockets(store)
    first = store.start(STAMP, "ann")
    sockets.held = {session_key(first)}
    later = [store.start(STAMP, "ann") for _ in range(MAX_SESSIONS)]
    assert not store.alive(first, STAMP) and all(store.alive(s, STAMP) for s in later)
    assert sockets.closed == {session_key(first)}
    assert redis_server.client().zcard("cadre:sessions:ann") == MAX_SESSIONS


def test_after_redis_was_away_a_node_looks_again_at_the_sessions_it_holds(nodes, redis_server):
    """Ends published while a node did not hear Redis are missed: once it hears again, each
    socket's session is looked at again. (Redis restarted without its data: every
    session ended, and every socket of one closes.)"""
    store = store_of(nodes, "node-a")
    sockets = Sockets(store)
    sid = store.start(STAMP, "ann")
    sockets.held = {session_key(sid)}
    redis_server.stop()
    try:
        with pytest.raises(Unavailable, match="does not answer"):
            store.alive(sid, STAMP)
    finally:
        redis_server.start()
    wait_for(lambda: sockets.closed == {session_key(sid)}, timeout=15,
             what="the node looking again once Redis answers")  # fmt: skip
    assert not store.alive(sid, STAMP)


def test_without_redis_nobody_is_taken_for_logged_in_and_the_words_say_why(nodes):
    store = store_of(nodes.unreachable, "node-a")
    with pytest.raises(Unavailable, match="does not answer"):
        store.alive("a session id", STAMP)
    with pytest.raises(Unavailable, match="the login cannot be kept"):
        store.start(STAMP, "ann")


def test_a_process_alone_keeps_them_in_usr_and_a_restart_keeps_them(usr_dir):
    path = usr_dir / "sessions.json"
    store = SessionStore(FileBook(path))
    sockets = Sockets(store)
    sid, other = store.start(STAMP, "ann"), store.start(STAMP, "ann")
    sockets.held = {session_key(other)}
    again = SessionStore(FileBook(path))
    assert again.alive(sid, STAMP) and sid not in path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600
    assert store.keep_only(sid, NEW_STAMP, "ann") is True
    assert sockets.closed == {session_key(other)}
    assert SessionStore(FileBook(path)).alive(sid, NEW_STAMP)
