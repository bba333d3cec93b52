"""Accounts in a cluster: two real run_ui.py nodes on one real redis-server, one shared usr/
folder, each node with its own id and port. Any node serves any page of any person.

A login made on node A works on node B (a page's request and its Socket.IO connection), and
a logout, or an account disabled, on A closes the page's socket on B; a user made on A logs
in and uses their key on B at once; users made on both nodes at the same moment are all
kept; and what a person's runs spend on both nodes in the same second adds up, on either
node, and in usr/usage.json; and a person's notifications are the same on both nodes, an
entry marked read on one kept so when a run on the other adds the next. The nodes are
shared by the module's tests; each test makes the people it uses.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import socketio

from cluster.run_queue import GROUP, QUEUE_KEY, READ_BLOCK
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import FakeLLMServer, Reply, last_user_contains, model_is
from tests.support.live_web import Browser, ack, close_socket, csrf_token, live_server, log_in
from tests.support.members import api, page, socket_of
from tests.support.redis_server import RedisServer
from tests.support.server_process import ServerProcess

ADMIN, ADMIN_PASSWORD, ADMIN_KEY = "root", "the admin's password", "k-cluster-accounts-0123"
#: Seconds an answer through the API is waited for (a busy machine's first model call).
ANSWER_TIMEOUT = 120
_numbers = itertools.count(1)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, _fake_llm_server, redis_server: RedisServer
          ) -> Iterator[tuple[ServerProcess, ServerProcess]]:  # fmt: skip
    """Node A, then node B, with the first admin of the settings (both are given it). Each
    takes one run at a time from the run queue (a test knows where a second run goes), and
    every run that finishes is a notification."""
    redis_server.client().flushdb()  # the session's Redis: nothing of another test's
    usr = tmp_path_factory.mktemp("cluster-accounts") / "usr"
    usr.mkdir()
    started: list[ServerProcess] = []
    try:
        for name in ("node-a", "node-b"):
            started.append(live_server(
                tmp_path_factory.mktemp(name), _fake_llm_server.base_url, api_key=ADMIN_KEY,
                auth_login=ADMIN, auth_password=ADMIN_PASSWORD, usr_dir=str(usr),
                redis_url=redis_server.url, node_id=name, node_runs="1", notify_long_run="0",
            ))  # fmt: skip
        yield started[0], started[1]
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def fake(_fake_llm_server: FakeLLMServer) -> Iterator[FakeLLMServer]:
    _fake_llm_server.reset()
    yield _fake_llm_server
    _fake_llm_server.reset()


def new_user(node: ServerProcess, role: str = "member") -> tuple[str, str]:
    """A user the admin made through `node`'s API: their name and password."""
    name = f"member{next(_numbers)}"
    password = f"{name}'s password"
    made = api(node, "POST", "/users", ADMIN_KEY, {"name": name, "password": password,
                                                   "role": role})  # fmt: skip
    assert made.status_code == 201, made.text
    return name, password


def logged_in(node: ServerProcess, name: str, password: str) -> Browser:
    browser = log_in(node, name, password)
    assert browser.last.status_code == 200, browser.last.text
    return browser


def page_socket(browser: Browser, node: ServerProcess) -> tuple[socketio.Client, threading.Event]:
    """The page's socket on `node`, and an event set when the server closes it."""
    client = socket_of(browser, node)
    dropped = threading.Event()
    client.on("disconnect", lambda *_: dropped.set())
    return client, dropped


def own_keys(browser: Browser, node: ServerProcess, name: str) -> int:
    """The status of a page's request that needs its login (the person's own keys)."""
    return browser.get(f"{node.url}/api/users/{name}/keys", timeout=10).status_code


def test_a_login_on_node_a_serves_a_page_and_its_socket_on_node_b(nodes):
    a, b = nodes
    name, password = new_user(a)
    browser = logged_in(a, name, password)
    assert own_keys(browser, b, name) == 200
    made = page(browser, b, "POST", f"/api/users/{name}/keys", {"label": "made on b"})
    assert made.status_code == 201, made.text  # its CSRF token holds on B too
    client, _ = page_socket(browser, b)
    try:
        assert ack(client, "chats:list")["ok"]
    finally:
        close_socket(client)


def test_a_logout_on_node_a_closes_the_pages_socket_on_node_b(nodes):
    a, b = nodes
    name, password = new_user(a)
    browser = logged_in(a, name, password)
    copied = {"Cookie": "; ".join(f"{c.name}={c.value}" for c in browser.cookies)}
    client, dropped = page_socket(browser, b)
    try:
        assert ack(client, "chats:list")["ok"]
        out = browser.post(f"{a.url}/logout", headers={"X-CSRF-Token": csrf_token(browser, a)},
                           timeout=10)  # fmt: skip
        assert out.status_code == 200
        assert dropped.wait(10), "the socket on node B of the session ended on A is open"
    finally:
        close_socket(client)
    assert requests.get(f"{b.url}/api/users/{name}/keys", headers=copied,
                        timeout=10).status_code == 401  # fmt: skip


def test_an_account_disabled_on_node_a_is_logged_out_on_node_b(nodes):
    a, b = nodes
    name, password = new_user(a)
    browser = logged_in(b, name, password)
    client, dropped = page_socket(browser, b)
    try:
        disabled = api(a, "PATCH", f"/users/{name}", ADMIN_KEY, {"disabled": True})
        assert disabled.status_code == 200, disabled.text
        assert dropped.wait(10), "the disabled person's socket on node B is open"
    finally:
        close_socket(client)
    assert own_keys(browser, b, name) == 401
    assert log_in(b, name, password).last.status_code != 200


def test_a_user_made_on_node_a_logs_in_and_uses_their_key_on_node_b_at_once(nodes):
    a, b = nodes
    name, password = new_user(a)
    browser = logged_in(b, name, password)  # made on A, logged in on B
    keyed = page(browser, a, "POST", f"/api/users/{name}/keys", {"label": "cli"})
    assert keyed.status_code == 201, keyed.text
    used = api(b, "GET", "/usage", keyed.json()["key"])  # made on A, used on B
    assert used.status_code == 200, used.text
    assert [row["name"] for row in used.json()["users"]] == [name]
    revoked = page(browser, b, "DELETE", f"/api/keys/{keyed.json()['id']}")
    assert revoked.status_code == 200, revoked.text
    assert api(a, "GET", "/usage", keyed.json()["key"]).status_code == 401


def test_users_made_on_both_nodes_at_the_same_moment_are_all_kept(nodes):
    a, b = nodes
    go = threading.Barrier(4)
    made: list[str] = []
    failures: list[str] = []

    def make(node: ServerProcess, count: int) -> None:
        go.wait(30)
        for _ in range(count):
            name = f"together{next(_numbers)}"
            answer_ = api(node, "POST", "/users", ADMIN_KEY,
                          {"name": name, "password": f"{name}'s password"})  # fmt: skip
            (made if answer_.status_code == 201 else failures).append(name)

    workers = [threading.Thread(target=make, args=(node, 3)) for node in (a, b) * 2]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert failures == [] and len(made) == 12
    for node in (a, b):
        listed = {row["name"] for row in api(node, "GET", "/users", ADMIN_KEY).json()["users"]}
        assert set(made) <= listed, sorted(set(made) - listed)
    stored = json.loads((a.usr_dir / "users.json").read_text())
    assert set(made) <= {row["name"] for row in stored["users"]}


def ask(node: ServerProcess, key: str, message: str, answers: list[dict[str, Any]]) -> None:
    answered = requests.post(f"{node.url}/api/v1/message", json={"message": message},
                             headers={"X-API-Key": key}, timeout=ANSWER_TIMEOUT)  # fmt: skip
    answers.append({"status": answered.status_code, "text": answered.text})


def today(node: ServerProcess, name: str) -> dict[str, Any]:
    rows = api(node, "GET", "/usage", ADMIN_KEY).json()["users"]
    return dict(next(row for row in rows if row["name"] == name)["today"])


def test_what_runs_spend_on_both_nodes_in_the_same_second_adds_up(nodes, fake, redis_server):
    """Two runs of one person, each held by the fake model until both are in flight, one on
    each node, end together: each node counts its own, and neither count is lost."""
    a, b = nodes
    name, password = new_user(a)
    browser = logged_in(a, name, password)
    key = page(browser, a, "POST", f"/api/users/{name}/keys", {"label": "runs"}).json()["key"]
    go = threading.Event()
    fake.add_rule(model_is("util-model"), Reply("Named", usage=(5, 1)))
    fake.add_rule(last_user_contains("first run"),
                  Reply(answer("first"), usage=(100, 10), gate=go), times=1)  # fmt: skip
    fake.add_rule(last_user_contains("second run"),
                  Reply(answer("second"), usage=(200, 20), gate=go), times=1)  # fmt: skip
    before = taken(a)
    answers: list[dict[str, Any]] = []
    runs = []
    for node, text in ((a, "first run"), (b, "second run")):
        if runs:
            # The node running the first (at its limit of one run) reads the run queue no
            # more once its last read ends: the second goes to the other node.
            wait_for(lambda: not_reading(redis_server, busy(a, before)), timeout=10,
                     what="the busy node's last read of the run queue to end")  # fmt: skip
        runs.append(threading.Thread(target=ask, args=(node, key, text, answers)))
        runs[-1].start()
        wait_for(lambda t=text: any(t in json.dumps(r.body) for r in fake.chat_requests()),
                 timeout=ANSWER_TIMEOUT, what=f"the {text} at the model")  # fmt: skip
    go.set()
    for run in runs:
        run.join(ANSWER_TIMEOUT)
    assert [a_["status"] for a_ in answers] == [200, 200], answers
    took = {node: count - before.get(node, 0) for node, count in taken(a).items()}
    assert took == {"node-a": 1, "node-b": 1}, f"the runs were not one on each node: {took}"

    def expected() -> tuple[int, int]:
        util = len(fake.chat_requests("util-model"))
        return 330 + 6 * util, 2 + util

    def seen(node: ServerProcess) -> tuple[int, int]:
        row = today(node, name)
        return row["tokens"], row["calls"]

    wait_for(lambda: seen(a) == seen(b) == expected(), timeout=30,
             what="both nodes counting both runs")  # fmt: skip

    def on_disk() -> tuple[int, int]:
        days = json.loads((a.usr_dir / "usage.json").read_text())["days"]
        rows = [users[name] for users in days.values() if name in users]
        return (sum(r["prompt_tokens"] + r["completion_tokens"] for r in rows),
                sum(r["calls"] for r in rows))  # fmt: skip

    wait_for(lambda: on_disk() == expected(), timeout=30, what="usage.json counting both")


def busy(node: ServerProcess, before: dict[str, int]) -> list[str]:
    """The nodes that took a run from the queue since `before`."""
    return [name for name, count in taken(node).items() if count > before.get(name, 0)]


def not_reading(redis_server: RedisServer, names: list[str]) -> bool:
    """Whether none of these nodes waits on the run queue now: each last began a read longer
    ago than a read blocks (cluster/run_queue.py)."""
    idle = {row["name"]: row["idle"] for row in
            redis_server.client().xinfo_consumers(QUEUE_KEY, GROUP)}  # fmt: skip
    return all(idle.get(name, 0) > (READ_BLOCK + 0.2) * 1000 for name in names)


def taken(node: ServerProcess) -> dict[str, int]:
    """Runs each node took from the run queue (the cluster view: the admin's page's)."""
    view = logged_in(node, ADMIN, ADMIN_PASSWORD).get(f"{node.url}/api/cluster", timeout=10)
    assert view.status_code == 200, view.text
    return {row["node"]: int(row.get("taken", 0)) for row in view.json()["nodes"]}


def test_a_persons_notifications_are_the_same_on_both_nodes(nodes, fake):
    """A run's news is kept by the node that ran it; the page lists it on either node (each
    node opened the history before), marks it read on B, and the next run's news, on any
    node, keeps it read."""
    a, b = nodes
    name, password = new_user(a)
    key = api(a, "POST", f"/users/{name}/keys", ADMIN_KEY, {"label": "runs"}).json()["key"]
    # A page on each node, each logged in there: what this test shows is the history.
    sockets = {node: socket_of(logged_in(node, name, password), node) for node in (a, b)}
    try:
        for client in sockets.values():
            assert ack(client, "notifications:list")["items"] == []

        def listed(node: ServerProcess) -> list[tuple[str, bool]]:
            items = ack(sockets[node], "notifications:list")["items"]
            return [(item["message"], item["read"]) for item in items]

        fake.add_rule(model_is("util-model"), Reply("Named"))
        answers: list[dict[str, Any]] = []
        fake.script(Reply(answer("first answer")))
        ask(a, key, "first", answers)
        wait_for(lambda: listed(a) == listed(b) == [("first answer", False)], timeout=30,
                 what="the first run's news on both nodes")  # fmt: skip
        first = ack(sockets[b], "notifications:list")["items"][0]["id"]
        assert ack(sockets[b], "notifications:read", {"ids": [first]})["ids"] == [first]
        fake.script(Reply(answer("second answer")))
        ask(b, key, "second", answers)
        expected = [("second answer", False), ("first answer", True)]
        wait_for(lambda: listed(a) == listed(b) == expected, timeout=30,
                 what="the second run's news on both nodes, the first still read")  # fmt: skip
        assert [answer_["status"] for answer_ in answers] == [200, 200], answers
        stored = json.loads((a.usr_dir / "users" / name / "notifications.json").read_text())
        assert [(i["message"], i["read"]) for i in reversed(stored["items"])] == expected
    finally:
        for client in sockets.values():
            close_socket(client)


def test_failed_logins_are_counted_across_the_nodes(nodes, redis_server):
    """Someone guessing a password through a load balancer gets five tries in all, not five
    per node: the throttle counts in Redis (cluster/redis_throttle.py)."""
    a, b = nodes
    name, password = new_user(a)
    for attempt in range(5):  # five wrong passwords, turn about on the two nodes
        tried = log_in((a, b)[attempt % 2], name, "a wrong guess").last
        assert tried.status_code == 401, tried.text
    for node in (a, b):
        refused = log_in(node, name, password).last  # the right one, too late
        assert refused.status_code == 429, refused.text
        assert "too many failed logins" in refused.json()["error"]
    assert redis_server.client().exists(f"cadre:throttle:account {name}")
