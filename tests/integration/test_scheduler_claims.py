"""The scheduler of several nodes, in one process: each node a `RedisNode` of one real
redis-server, each scheduler with its own task store on the one shared tasks.json, real
runs through the chats' runner and the scripted model server.

Without claims, two schedulers that hold a due task both fire it (what each node of a
cluster did before the claims); with them it fires once. A run another node claimed is
left to it, and fired here once that claim expired unused. A run marked going on is left
to a live node that may run it; once that node is gone, it is recorded as cut short once.
While Redis is away no run fires, the log says so once, and the task stays due until
Redis is back; a change of the task list is refused in words (a 503).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from cluster.config import cluster_config
from cluster.node import ClusterUnavailable, Node, node_for
from initialize import ChatFactory
from scheduler.service import Scheduler
from scheduler.store import TaskStore
from scheduler.tasks import Task, TaskSpec
from server.app import create_app
from store.chats import ChatManager
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import FakeLLMServer, Reply, last_user_contains, model_is
from tests.support.redis_server import RedisServer
from tests.support.server_process import free_port

PROMPT = "Report now."


@pytest.fixture
def chats(llm: FakeLLMServer, runtime) -> Iterator[ChatManager]:
    llm.add_rule(last_user_contains(PROMPT), Reply(answer("Reported.")))
    llm.add_rule(model_is("util-model"), Reply("Report"))
    manager = ChatManager(runtime, ChatFactory(runtime))
    manager.load_saved()
    yield manager
    manager.close_sessions()


@pytest.fixture
def cluster(redis_server: RedisServer) -> Iterator[Callable[..., Node]]:
    """Makes nodes of a Redis (the session's, emptied, unless `url` names another)."""
    redis_server.client().flushdb()
    made: list[Node] = []

    def node(name: str, url: str = redis_server.url) -> Node:
        config = cluster_config({"CADRE_REDIS_URL": url, "CADRE_NODE_ID": name})
        made.append(node_for(config, "127.0.0.1:5080"))
        return made[-1]

    yield node
    for each in made:
        each.stop()


def node_scheduler(chats: ChatManager, node: Node) -> Scheduler:
    """A node's scheduler as server/app.py makes it."""
    return Scheduler(TaskStore(shared=node), chats, coordination=node)


def planned(scheduler: Scheduler) -> Task:
    """A task due once, an hour from now (the tests tick at its time: nobody waits)."""
    at = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    return scheduler.create(TaskSpec(name="Report", prompt=PROMPT, kind="planned", at=[at]))


def runs(llm: FakeLLMServer) -> int:
    return sum(1 for r in llm.chat_requests("chat-model") if PROMPT in str(r.body))


@pytest.mark.parametrize("claims", [False, True], ids=["each alone", "claims"])
def test_two_schedulers_holding_a_due_task_fire_it_once_with_claims(chats, llm, cluster, claims):
    if claims:
        first = node_scheduler(chats, cluster("node-a"))
        task = planned(first)
        second = node_scheduler(chats, cluster("node-b"))
    else:  # each process's scheduler as it was: its own memory of the file, no claims
        first = Scheduler(TaskStore(), chats)
        task = planned(first)
        second = Scheduler(TaskStore(), chats)
    assert second.store.get(task.id) == task  # both hold it
    go = threading.Barrier(2)
    started: list[list[str]] = []

    def tick(scheduler: Scheduler) -> None:
        go.wait(10)
        started.append(scheduler.tick(task.next_run))

    ticks = [threading.Thread(target=tick, args=(s,)) for s in (first, second)]
    for thread in ticks:
        thread.start()
    for thread in ticks:
        thread.join(30)
    for scheduler in (first, second):
        scheduler.wait(task.id, 60)
    fired = 1 if claims else 2
    assert sorted(started) == sorted([[task.id]] * fired + [[]] * (2 - fired))
    assert runs(llm) == fired
    done = TaskStore().get(task.id)
    assert (done.last_status, done.next_run) == ("success", None)


def test_a_run_another_node_claimed_is_left_to_it_and_fired_once_its_claim_expired(
    chats, llm, cluster
):
    """The claimant died before planning the task forward: the run is not lost."""
    a, other = cluster("node-a"), cluster("node-b")
    scheduler = node_scheduler(chats, a)
    task = planned(scheduler)
    assert task.next_run is not None
    assert other.claim(f"fire:{task.id}:{task.next_run.isoformat()}", ttl=0.5)
    assert scheduler.tick(task.next_run) == []
    assert scheduler.store.get(task.id).next_run == task.next_run  # the claimant plans it
    assert runs(llm) == 0
    wait_for(lambda: scheduler.tick(task.next_run), timeout=10, what="the claim's expiry")
    scheduler.wait(task.id, 60)
    assert runs(llm) == 1
    assert scheduler.tick(task.next_run) == []  # planned forward: nothing due any more
    done = scheduler.store.get(task.id)
    assert (done.last_status, done.next_run) == ("success", None)


def test_a_run_marked_going_on_is_left_to_a_node_that_may_run_it_and_recorded_once_after(
    chats, llm, cluster
):
    """A node that starts while another node runs a task finds the run marked in tasks.json:
    not its own, and not cut short while the node that may run it lives. Once that node is
    gone, the nodes that start record it as interrupted, and start it again, once."""
    runner = cluster("node-a")
    runner.start(lambda: 0)  # listed in Redis, as a serving node is
    b, c = (node_scheduler(chats, cluster(name)) for name in ("node-b", "node-c"))
    task = planned(b)
    began = datetime.now(UTC)  # after node A started: its run, for all B and C know
    b.store.update(task.id, lambda t: t.model_copy(update={"running_since": began,
                                                           "last_run": began}))  # fmt: skip
    assert b.interrupted() == [] and c.interrupted() == []
    assert b.store.get(task.id).running_since == began  # left to node A
    runner.stop()  # node A leaves the cluster: its run ended with it
    again = b.interrupted() + c.interrupted()
    assert again == [task.id]  # one of them, once
    for scheduler in (b, c):
        scheduler.wait(task.id, 60)
    assert runs(llm) == 1
    done = b.store.get(task.id)
    assert (done.last_status, done.running_since) == ("success", None)


def test_while_redis_is_away_no_run_fires_and_the_task_stays_due(chats, llm, cluster, tmp_path,
                                                                 caplog):  # fmt: skip
    redis = RedisServer(tmp_path / "redis").start()
    try:
        scheduler = node_scheduler(chats, cluster("node-a", url=redis.url))
        task = planned(scheduler)
        redis.stop()
        with caplog.at_level(logging.INFO, logger="scheduler"):
            assert scheduler.tick(task.next_run) == []
            assert scheduler.tick(task.next_run) == []
            said = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
            assert len(said) == 1  # once per outage, not once a round
            assert said[0].startswith(f"due tasks are not run now: Redis at {redis.url} does not")
            assert said[0].endswith("They stay due, and run once the cluster answers again")
            assert scheduler.store.get(task.id).next_run == task.next_run
            with pytest.raises(ClusterUnavailable, match="the cluster's lock 'tasks' cannot be"):
                planned(scheduler)  # no change of the task list either (a 503 in the API)
            assert runs(llm) == 0

            redis.start()  # back, on the same address
            assert scheduler.tick(task.next_run) == [task.id]
            assert "due tasks can be claimed again" in caplog.text
        scheduler.wait(task.id, 60)
        assert runs(llm) == 1
        assert scheduler.store.get(task.id).last_status == "success"
    finally:
        redis.close()


def test_a_change_of_tasks_while_redis_is_away_is_a_503_in_words(chats, cluster, monkeypatch,
                                                                  caplog):  # fmt: skip
    monkeypatch.setenv("CADRE_API_KEY", "k-claims-0123456789")
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    built = create_app(chats, node=cluster("node-a", url=url))
    try:
        with caplog.at_level(logging.WARNING):
            reply = built.app.test_client().post(
                "/api/v1/tasks", headers={"X-API-Key": "k-claims-0123456789"},
                json={"name": "Report", "prompt": PROMPT, "kind": "adhoc"},
            )  # fmt: skip
        assert reply.status_code == 503
        assert reply.json["error"].startswith(f"Redis at {url} does not answer (")
        assert reply.json["error"].endswith("Check that Redis runs and that this node reaches it")
        assert f"POST /api/v1/tasks: Redis at {url} does not answer" in caplog.text
        assert built.scheduler.tasks() == []
    finally:
        built.mcp.stop()
