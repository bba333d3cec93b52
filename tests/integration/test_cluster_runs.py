"""Three real run_ui.py nodes on one real redis-server and one shared usr/ folder: where a
chat runs, and every node answering for it (issue 36).

A message sent to one node runs on the node the run queue gives it to, under that chat's
lease; a page on any other node watches it stream; an intervention sent to a third node
reaches it; every node shows the same chat; and when the node running it is killed
(SIGKILL) mid-run, another node takes the chat over from disk and finishes it, with every
log item once, in order. The nodes are shared by the module's tests; the last one kills one.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from cluster.leases import lease_key
from cluster.relay_auth import HEADER, sign
from server.cluster.relay import EVENT_PATH
from tests.support.agents import answer, cut_before, reply, wait_for
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import (
    ack,
    as_host,
    close_socket,
    live_server,
    log_text,
    open_socket,
    warm_up,
)
from tests.support.redis_server import RedisServer
from tests.support.server_process import ServerProcess

API_KEY = "k-cluster-runs-0123456789"
#: Seconds a node's heartbeat and leases live: short, so a killed node's chat moves soon.
TTL = 3.0
NAMES = ("node-a", "node-b", "node-c")


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, _fake_llm_server, redis_server: RedisServer
          ) -> Iterator[dict[str, ServerProcess]]:  # fmt: skip
    """Three nodes on one Redis and one usr/ folder, each warmed up (its first model call
    paid before the tests)."""
    redis_server.client().flushdb()
    usr = tmp_path_factory.mktemp("cluster-runs") / "usr"
    usr.mkdir()
    started: dict[str, ServerProcess] = {}
    try:
        for name in NAMES:
            started[name] = live_server(
                tmp_path_factory.mktemp(name), _fake_llm_server.base_url, api_key=API_KEY,
                usr_dir=str(usr), redis_url=redis_server.url, node_id=name, node_ttl=str(TTL),
                drain_grace="1", llm_retries="0",
            )  # fmt: skip
        for server in started.values():
            warm_up(server, _fake_llm_server)
        yield started
    finally:
        for server in started.values():
            server.stop()


def api(server: ServerProcess, method: str, path: str, body: dict | None = None) -> dict:
    answer_ = requests.request(method, server.url + path, json=body, timeout=60,
                               headers={"X-API-Key": API_KEY})  # fmt: skip
    assert answer_.status_code == 200, (server.env["CADRE_NODE_ID"], answer_.text)
    return dict(answer_.json())


def holder(redis_server: RedisServer, chat_id: str) -> str | None:
    found = redis_server.client().get(lease_key(chat_id))
    return found.decode() if isinstance(found, bytes) else found


def others(nodes: dict[str, ServerProcess], name: str) -> list[ServerProcess]:
    """The live nodes but `name`."""
    return [server for other, server in live(nodes).items() if other != name]


def live(nodes: dict[str, ServerProcess]) -> dict[str, ServerProcess]:
    return {name: s for name, s in nodes.items() if s.process and s.process.poll() is None}


def chat_view(server: ServerProcess, chat_id: str) -> dict:
    return api(server, "GET", f"/api/v1/chats/{chat_id}")


def held_run(llm, text: str, *marks: str) -> tuple[Reply, list[threading.Event]]:
    """A reply of Agent 0 whose stream stops before each of `marks` until its event is set."""
    gates = [threading.Event() for _ in marks]
    pieces = cut_before(answer(text), *marks)
    return Reply(pieces, holds={i + 1: gate for i, gate in enumerate(gates)}), gates


@pytest.fixture
def fake(nodes, llm):
    llm.add_rule(model_is("util-model"), Reply("Named"))
    return llm


def start_run(nodes: dict[str, ServerProcess], redis_server: RedisServer, message: str
              ) -> tuple[str, str]:  # fmt: skip
    """A message to a new chat through the first live node (not waited for): the chat's
    id, and the node that runs it once its run has begun."""
    first = next(iter(live(nodes).values()))
    sent = api(first, "POST", "/api/v1/message", {"message": message, "wait": False})
    chat_id = sent["context_id"]
    runner = wait_for(lambda: holder(redis_server, chat_id), timeout=20, what="the run's lease")
    return chat_id, runner


def test_a_run_streams_to_a_page_on_another_node_and_every_node_shows_it(
        nodes, redis_server, fake):  # fmt: skip
    reply, (gate,) = held_run(fake, "Streamed across nodes.", "across")
    fake.script(reply)
    chat_id, runner = start_run(nodes, redis_server, "stream this")
    watcher = others(nodes, runner)[0]
    page = open_socket(watcher, as_host(watcher, "127.0.0.1"))
    heard: list[dict] = []
    page.on("log", heard.append)
    try:
        subscribed = ack(page, "chat:subscribe", {"chat_id": chat_id})
        assert subscribed["ok"], subscribed
        assert subscribed["state"]["running"] is True, subscribed
        # Mid-run, every node shows the same chat, running, with the same log.
        views = [chat_view(server, chat_id)["chat"] for server in nodes.values()]
        assert all(view["running"] for view in views), views

        # The admins' view, from any node: who runs it, and each node's load.
        def view() -> dict[str, dict] | None:
            # A heartbeat (every TTL / 3) counts the runs, and gives up the leases of runs
            # that ended (the warm-ups' just before this test).
            found = {row["node"]: row for row in api(watcher, "GET", "/api/cluster")["nodes"]}
            settled = all(row["chats"] == ([chat_id] if name == runner else [])
                          for name, row in found.items())  # fmt: skip
            return found if found[runner]["runs"] == 1 and settled else None

        rows = wait_for(view, timeout=10, what="the heartbeats counting the run")
        assert list(rows) == list(NAMES)
        assert rows[runner]["chats"] == [chat_id] and rows[runner]["runs"] == 1
        assert rows[runner]["load"] == round(1 / 32, 3) and rows[runner]["draining"] is False
        gate.set()
        wait_for(lambda: any("Streamed across nodes." in item["content"]
                             for delta in heard for item in delta["items"]),
                 timeout=20, what="the answer streamed to the page on the other node")  # fmt: skip
        assert {delta["chat_id"] for delta in heard} == {chat_id}
    finally:
        gate.set()
        close_socket(page)
    done = [wait_for(lambda s=s: not chat_view(s, chat_id)["chat"]["running"], timeout=20,
                     what="the run's end seen on every node") for s in nodes.values()]  # fmt: skip
    assert all(done)
    logs = [_log_ids(chat_view(server, chat_id)) for server in nodes.values()]
    assert logs[0] == logs[1] == logs[2], logs


def test_every_node_lists_the_same_chats_and_sees_a_rename_made_on_another(nodes, fake):
    a, b, c = nodes.values()
    fake.script(Reply(answer("Hello.")))
    made = api(a, "POST", "/api/v1/message", {"message": "hello", "wait": True})["context_id"]

    def listed(server: ServerProcess) -> dict[str, str]:
        return {row["id"]: row["name"] for row in api(server, "GET", "/api/v1/chats")["chats"]}

    # Its name comes from the utility model once its run ended: then all three agree.
    wait_for(lambda: listed(a).get(made) == "Named", timeout=20, what="the chat's name")
    # The other nodes hear of it over Redis a moment later (seen once in a full run).
    wait_for(lambda: listed(a) == listed(b) == listed(c), timeout=10, what="all three agreeing")
    assert made in listed(b) and listed(a) == listed(b) == listed(c)
    page = open_socket(b, as_host(b, "127.0.0.1"))
    try:
        renamed = ack(page, "chat:rename", {"chat_id": made, "name": "Renamed on B"})
        assert renamed["ok"], renamed
    finally:
        close_socket(page)
    assert listed(c)[made] == listed(a)[made] == "Renamed on B"
    assert chat_view(c, made)["chat"]["name"] == "Renamed on B"


def test_an_intervention_sent_to_a_third_node_reaches_the_run(nodes, redis_server, fake):
    reply, (gate,) = held_run(fake, "First answer.", "answer")
    fake.script(reply, Reply(answer("Saw the intervention.")))
    chat_id, runner = start_run(nodes, redis_server, "work on it")
    third = others(nodes, runner)[-1]
    try:
        asked = {"context_id": chat_id, "message": "Also mind the colour.", "wait": False}
        sent = api(third, "POST", "/api/v1/message", asked)
        assert sent["context_id"] == chat_id
        wait_for(lambda: any(i["content"] == "Also mind the colour."
                             for i in chat_view(runner_of(nodes, runner), chat_id)["log"]),
                 timeout=20, what="the intervention in the running chat's log")  # fmt: skip
    finally:
        gate.set()
    wait_for(lambda: not chat_view(third, chat_id)["chat"]["running"], timeout=30,
             what="the run's end")  # fmt: skip
    asked = [r.body for r in fake.chat_requests("chat-model")]
    assert any("Also mind the colour." in str(body["messages"]) for body in asked), asked


def test_a_chat_running_on_one_node_is_branched_through_another(nodes, redis_server, fake):
    """The branch route finds the chat as every chat route does: the node running it makes
    the branch from where the run stands (server/routes/branches.py), every node lists it."""
    reply, (gate,) = held_run(fake, "First answer.", "answer")
    fake.script(reply)
    chat_id, runner = start_run(nodes, redis_server, "work on it")
    third = others(nodes, runner)[-1]
    try:
        made = api(third, "POST", f"/api/v1/chats/{chat_id}/branch", {"at": 0})
    finally:
        gate.set()
    branch_id = made["context_id"]
    assert made["chat"]["parent"] == {"id": chat_id, "at": 0}
    wait_for(lambda: not chat_view(third, chat_id)["chat"]["running"], timeout=30,
             what="the parent's run to end")  # fmt: skip
    for server in live(nodes).values():
        rows = {row["id"]: row for row in api(server, "GET", "/api/v1/chats")["chats"]}
        assert rows[branch_id]["parent"] == {"id": chat_id, "at": 0}
    branch = chat_view(third, branch_id)
    assert branch["chat"]["interrupted"] and branch["log"][0]["content"] == "work on it"
    assert [b["id"] for b in chat_view(third, chat_id)["branches"]] == [branch_id]


def test_a_held_call_is_answered_through_another_node(nodes, redis_server, fake):
    """The approval's route behaves as every chat's: a node that does not run the chat
    hands the answer to the one that does (server/cluster/relay.py)."""
    first = next(iter(live(nodes).values()))
    settings = first.usr_dir / "settings.json"
    assert not settings.exists()  # the nodes' settings are their environment's
    rules = [{"tool": "text_editor:write", "rule": "ask"}]
    written = settings.with_name("settings.new.json")
    written.write_text(json.dumps({"tool_rules": rules}))
    written.replace(settings)  # in one step: a node never reads half a file
    try:
        fake.script(Reply(reply("text_editor:write", path="relayed.txt", content="via another")),
                    Reply(answer("Written.")))  # fmt: skip
        chat_id, runner = start_run(nodes, redis_server, "write it")
        other = others(nodes, runner)[0]
        [held] = wait_for(lambda: chat_view(other, chat_id)["approvals"], timeout=20,
                          what="the held call, seen from another node")  # fmt: skip
        assert held["tool"] == "text_editor:write"
        answered = api(other, "POST", f"/api/v1/approvals/{held['id']}", {"decision": "allow"})
        assert answered["decision"] == "allow"
        wait_for(lambda: not chat_view(other, chat_id)["chat"]["running"], timeout=30,
                 what="the run's end")  # fmt: skip
    finally:
        settings.unlink()
    assert (first.usr_dir / "workdir" / "relayed.txt").read_text() == "via another"


def test_a_replay_asked_of_another_node_follows_the_record(nodes, redis_server, fake):
    """POST /api/v1/chats/<id>/replay is a chat route like the others: any node answers it
    (the one running the chat, through the relay), and the replay calls no model."""
    first, second = list(live(nodes).values())[:2]
    fake.script(Reply(reply("text_editor:write", path="replayed.txt", content="once")),
                Reply(answer("Wrote it.")))  # fmt: skip
    made = api(first, "POST", "/api/v1/message", {"message": "write it"})
    assert made["response"] == "Wrote it."
    wait_for(lambda: chat_view(first, made["context_id"])["chat"]["name"] == "Named",
             timeout=20, what="the chat's name (its last model call)")  # fmt: skip
    asked = len(fake.requests)
    replay = api(second, "POST", f"/api/v1/chats/{made['context_id']}/replay",
                 {"tools": "recorded"})  # fmt: skip

    def ended() -> list[dict]:
        log = chat_view(first, replay["context_id"])["log"]
        return [i for i in log if i["heading"] == "Replay ended"]

    [item] = wait_for(ended, timeout=30, what="the replay's end, seen from another node")
    assert item["kvps"]["replay"] == "followed" and len(fake.requests) == asked


def test_an_evaluation_started_on_one_node_is_followed_and_stopped_from_another(
        nodes, redis_server, fake):  # fmt: skip
    """The panel polls an evaluation's progress, and each poll may reach any node: the
    evaluation's id names the node that runs it, which answers (before: "no evaluation")."""
    first, second = list(live(nodes).values())[:2]
    suite = first.usr_dir / "evals" / "cluster.yaml"
    suite.parent.mkdir(exist_ok=True)
    suite.write_text("tasks:\n  - name: hello\n    message: Say hello.\n"
                     "    checks:\n      - contains: hello\n")  # fmt: skip
    fake.script(Reply(answer("Hello there.")))
    started = requests.post(first.url + "/api/v1/evals/runs", timeout=30,
                            headers={"X-API-Key": API_KEY},
                            json={"suite": "cluster", "profile": "default"})  # fmt: skip
    assert started.status_code == 202, started.text
    job_id = started.json()["id"]
    assert job_id.startswith(first.env["CADRE_NODE_ID"] + ".")

    def ended() -> dict | None:
        view = api(second, "GET", f"/api/v1/evals/runs/{job_id}")
        return view if view["state"] != "running" else None

    done = wait_for(ended, timeout=60, what="the evaluation, seen from another node")
    assert done["state"] == "done" and [r["passed"] for r in done["runs"]] == [True]
    assert api(second, "POST", f"/api/v1/evals/runs/{job_id}/stop")["id"] == job_id
    unknown = requests.get(second.url + "/api/v1/evals/runs/nobody.0", timeout=30,
                           headers={"X-API-Key": API_KEY})  # fmt: skip
    assert unknown.status_code == 404 and "node nobody" in unknown.json()["error"]


def test_a_relay_header_no_peer_signed_is_refused(nodes, redis_server):
    """Only a node, which reaches Redis and its secret, hands requests over: a header made
    up, or a real one sent again, is refused (and no event runs without one)."""
    a = nodes["node-a"]
    body = json.dumps({"event": "chats:list", "data": None}).encode()
    typed = {"Content-Type": "application/json"}
    bare = requests.post(a.url + EVENT_PATH, data=body, headers=typed, timeout=10)
    assert bare.status_code == 403, bare.text
    made_up = f"{_b64('node-b')};{time.time():.3f};00ff;;{'0' * 64}"
    forged = requests.post(a.url + EVENT_PATH, data=body, timeout=10,
                           headers={**typed, HEADER: made_up})  # fmt: skip
    assert forged.status_code == 403 and "signature" in forged.json()["error"], forged.text
    secret = redis_server.client().get("cadre:relay-secret")
    signed = sign(str(secret), "node-b", "POST", EVENT_PATH, "", body)
    first = requests.post(a.url + EVENT_PATH, data=body, timeout=10,
                          headers={**typed, HEADER: signed})  # fmt: skip
    assert first.status_code == 200 and first.json()["ok"] is True, first.text
    again = requests.post(a.url + EVENT_PATH, data=body, timeout=10,
                          headers={**typed, HEADER: signed})  # fmt: skip
    assert again.status_code == 403 and "used before" in again.json()["error"], again.text


def test_redis_stopped_mid_run_the_run_ends_new_runs_are_refused_then_all_is_back(
        nodes, redis_server, fake):  # fmt: skip
    reply, (gate,) = held_run(fake, "Finished without Redis.", "without")
    fake.script(reply, Reply(answer("Redis is back.")))
    chat_id, runner = start_run(nodes, redis_server, "go on regardless")
    running, other = nodes[runner], others(nodes, runner)[0]
    redis_server.stop()
    try:
        wait_for(lambda: health(other)["redis"] == "unreachable", timeout=TTL * 2 + 5,
                 what="the node noticing Redis is gone")  # fmt: skip
        refused = requests.post(other.url + "/api/v1/message", json={"message": "new work"},
                                headers={"X-API-Key": API_KEY}, timeout=30)  # fmt: skip
        assert refused.status_code == 503, refused.text
        assert "Redis" in refused.json()["error"] and "Try again" in refused.json()["error"]
        gate.set()
        # The run goes on where it ran, and ends there; that node still shows it.
        wait_for(lambda: _answered(running, chat_id, "Finished without Redis."), timeout=30,
                 what="the run ending on its node without Redis")  # fmt: skip
    finally:
        gate.set()
        redis_server.start()
    wait_for(lambda: all(health(s)["redis"] == "ok" for s in nodes.values()), timeout=TTL * 2 + 5,
             what="every node seeing Redis again")  # fmt: skip
    back = api(other, "POST", "/api/v1/message", {"message": "and now?", "wait": True})
    assert back["response"] == "Redis is back.", back


def test_a_node_frozen_past_its_lease_loses_its_chat_and_writes_it_no_more(
        nodes, redis_server, fake):  # fmt: skip
    """A slow node (here stopped outright, SIGSTOP) whose lease expired: another node takes
    the chat over and finishes it; the slow node, once it runs again, learns it lost the
    lease, stops its copy and never writes over the chat."""
    reply, (gate,) = held_run(fake, "Frozen here.", "here")
    fake.script(reply, Reply(answer("Finished while the other slept.")))
    chat_id, runner = start_run(nodes, redis_server, "a job for a slow node")
    slow = nodes[runner]
    mid_step(slow, chat_id)
    pids = slow.pids()
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        wait_for(lambda: holder(redis_server, chat_id) not in (None, runner),
                 timeout=TTL * 4 + 10, what="another node taking the chat over")  # fmt: skip
        survivor = others(nodes, runner)[0]
        final = wait_for(lambda: _answered(survivor, chat_id, "Finished while the other slept."),
                         timeout=30, what="the chat finished on another node")  # fmt: skip
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
        # Its stream goes on at once: the slow node's run may end before its heartbeat
        # renews (and learns the lease is lost); what it brings must go nowhere all the same.
        gate.set()
    wait_for(lambda: "this node stops its copy" in log_text(slow), timeout=TTL * 2 + 5,
             what="the slow node letting the chat go")  # fmt: skip
    wait_for(lambda: holder(redis_server, chat_id) is None, timeout=10, what="the run's end")
    time.sleep(1.0)  # a write the slow node would make comes within its paced save's pace
    assert _log_ids(chat_view(survivor, chat_id)) == _log_ids(final)
    assert _log_ids(chat_view(slow, chat_id)) == _log_ids(final)  # read again, as it is


def test_a_node_told_to_stop_hands_its_running_chat_over(nodes, redis_server, fake):
    """Next to last: the node running the chat is told to stop (SIGTERM) and drains: with
    its run still going after its grace (1 s), another node goes on with it."""
    reply, (gate,) = held_run(fake, "Never finished before the stop.", "before")
    fake.script(reply, Reply(answer("Finished after the hand-over.")))
    chat_id, runner = start_run(nodes, redis_server, "a job for a stopping node")
    mid_step(nodes[runner], chat_id)
    began = time.monotonic()
    nodes[runner].stop()  # SIGTERM
    stopped_after = time.monotonic() - began
    gate.set()  # the stopped node's stream: nobody reads it any more
    survivor = others(nodes, runner)[0]
    final = wait_for(lambda: _answered(survivor, chat_id, "Finished after the hand-over."),
                     timeout=30, what="the chat finished on another node")  # fmt: skip
    assert stopped_after < 12, stopped_after  # its grace, its saves, no more
    ids = [item["no"] for item in final["log"]]
    assert ids == sorted(set(ids)), ids
    asked = [r.body for r in fake.chat_requests("chat-model")]
    assert any("was shut down while you were working" in str(b["messages"]) for b in asked)


def test_a_node_killed_mid_run_has_its_chat_finished_by_another(nodes, redis_server, fake):
    """Last: the node running the chat is killed (SIGKILL, no goodbye)."""
    reply, (gate,) = held_run(fake, "Never finished here.", "finished")
    fake.script(reply, Reply(answer("Finished after the takeover.")))
    chat_id, runner = start_run(nodes, redis_server, "a long job")
    dying = runner_of(nodes, runner)
    mid_step(dying, chat_id)
    dying.stop(signal.SIGKILL)
    killed = time.monotonic()
    gate.set()  # the dead node's stream: nobody reads it any more
    survivor = others(nodes, runner)[0]
    wait_for(lambda: holder(redis_server, chat_id) not in (None, runner), timeout=TTL * 4 + 10,
             what="another node taking the chat's lease")  # fmt: skip
    taken_after = time.monotonic() - killed
    final = wait_for(lambda: _answered(survivor, chat_id, "Finished after the takeover."),
                     timeout=30, what="the chat finished on another node")  # fmt: skip
    assert taken_after <= TTL + TTL / 3 + 3, taken_after
    ids = [item["no"] for item in final["log"]]
    assert ids == sorted(set(ids)), ids  # every item once, in order
    asked = [r.body for r in fake.chat_requests("chat-model")]
    told = [b for b in asked if "failed while you were working" in str(b["messages"])]
    assert told, "the agent was not told of the node failure"


def mid_step(server: ServerProcess, chat_id: str) -> None:
    """Return once the run's step under way is on disk (a paced save: 2 s at most)."""
    wait_for(lambda: any(i["type"] == "agent" for i in chat_view(server, chat_id)["log"]),
             timeout=20, what="the run's first step")  # fmt: skip
    time.sleep(2.5)  # helpers/paced_save.py saves a step under way every 2 s


def health(server: ServerProcess) -> dict:
    return dict(requests.get(server.url + "/health", timeout=10).json())


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


def runner_of(nodes: dict[str, ServerProcess], name: str) -> ServerProcess:
    return nodes[name]


def _answered(server: ServerProcess, chat_id: str, text: str) -> dict | None:
    view = chat_view(server, chat_id)
    if view["chat"]["running"]:
        return None
    return view if any(i["type"] == "response" and text in i["content"]
                       for i in view["log"]) else None  # fmt: skip


def _log_ids(view: dict) -> list[tuple[int, str, str]]:
    """The log's items, but the chat's naming (the utility model names it after its run,
    whenever that answers)."""
    return [(i["no"], i["type"], i["content"]) for i in view["log"] if i["type"] != "util"]
