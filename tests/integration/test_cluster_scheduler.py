"""Three real run_ui.py nodes of one cluster and their scheduler: one real redis-server, one
shared usr/ folder, each node with its own id and port.

A due task fires once across the nodes: each node's scheduler sees it due, and only the
node that claims that run in Redis starts it. Counted by what a run leaves: the model's
requests (the fake server's record) and the task's chats on disk. tasks.json stays whole
while the nodes write it at once (under the cluster's `tasks` lock, read again when another
node changed it). The nodes are shared by the module's tests.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scheduler.tasks import Task
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import FakeLLMServer, Reply, last_user_contains, model_is
from tests.support.live_web import live_server
from tests.support.redis_server import RedisServer
from tests.support.server_process import ServerProcess, call_api

API_KEY = "k-cluster-scheduler-0123456789"
NAMES = ("node-a", "node-b", "node-c")
#: A task in tasks.json before the nodes start: every node reads it at its start, so each
#: one's scheduler holds it when it falls due (the case the claim is for).
SEEDED = "Seeded report"
#: Seconds from the seeding to its due time: about when the three nodes serve. Earlier or
#: later, it fires once all the same (a node that starts after it fired finds it planned).
SEEDED_IN = 9.0
#: Seconds between two rounds of a node's scheduler (scheduler/service.py TICK).
TICK = 1.0


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, _fake_llm_server: FakeLLMServer, redis_server: RedisServer
          ) -> Iterator[tuple[ServerProcess, ...]]:  # fmt: skip
    """Node A, then B and C at once (A made the shared folder's first files), on one Redis,
    with the seeded task in the shared tasks.json."""
    redis_server.client().flushdb()  # the session's Redis: nothing of another test's
    usr = tmp_path_factory.mktemp("cluster") / "usr"
    _seed(usr, datetime.now(UTC) + timedelta(seconds=SEEDED_IN))
    fake = _fake_llm_server
    # Every run's answer (the prompts name their task), and every chat's name.
    for name in (SEEDED, "Once"):
        fake.add_rule(last_user_contains(f"Report for {name}."), Reply(answer(f"{name} done.")))
    fake.add_rule(model_is("util-model"), Reply("Task chat"))

    def start(name: str) -> ServerProcess:
        return live_server(tmp_path_factory.mktemp(name), fake.base_url, api_key=API_KEY,
                           usr_dir=str(usr), redis_url=redis_server.url, node_id=name)  # fmt: skip

    started: list[ServerProcess] = []
    try:
        started.append(start(NAMES[0]))
        with ThreadPoolExecutor(2) as pool:
            started += pool.map(start, NAMES[1:])
        yield tuple(started)
    finally:
        for server in started:
            server.stop()
        fake.reset()


def _seed(usr: Path, due: datetime) -> None:
    task = Task(name=SEEDED, prompt=f"Report for {SEEDED}.", kind="planned", timezone="UTC",
                at=[due.isoformat()], next_run=due)  # fmt: skip
    folder = usr / "scheduler"
    folder.mkdir(parents=True)
    document = {"version": 1, "tasks": [task.model_dump(mode="json")]}
    (folder / "tasks.json").write_text(json.dumps(document), encoding="utf-8")


def call(server: ServerProcess, method: str, path: str, body: dict | None = None) -> dict:
    return call_api(server, method, path, body, key=API_KEY)


def tasks_on_disk(server: ServerProcess) -> list[dict]:
    """The shared tasks.json, read as a person would: whole, valid, nothing set aside."""
    folder = server.usr_dir / "scheduler"
    assert list(folder.glob("tasks.json.damaged-*")) == []
    document = json.loads((folder / "tasks.json").read_text(encoding="utf-8"))
    assert document["version"] == 1
    return list(document["tasks"])


def runs_of(fake: FakeLLMServer, name: str) -> int:
    """How many runs asked the model (one answer ends a run: one request each)."""
    return sum(1 for r in fake.chat_requests("chat-model") if f"Report for {name}." in str(r.body))


def chats_named(server: ServerProcess, name: str) -> list[str]:
    """The chats on disk that a run of task `name` made (each node makes its own)."""
    found = []
    for path in (server.usr_dir / "chats").glob("*/chat.json"):
        if json.loads(path.read_text(encoding="utf-8")).get("name") == f"Task: {name}":
            found.append(path.parent.name)
    return found


def claimant(redis_server: RedisServer, task: dict, due: str) -> str | None:
    """The node that claimed the task's run due at `due` (as the API shows times)."""
    when = datetime.fromisoformat(due.replace("Z", "+00:00")).isoformat()
    return redis_server.client().get(f"cadre:claim:fire:{task['id']}:{when}")


def settled(nodes: tuple[ServerProcess, ...], task_id: str) -> dict:
    """The task once its run ended on every node, and every node had rounds after its due
    time in which it could have started it again."""
    a = nodes[0]
    wait_for(lambda: call(a, "GET", f"/api/v1/tasks/{task_id}")["last_status"], timeout=60,
             what="the task's run to end")  # fmt: skip
    for node in nodes:  # `running` is each node's own: a second run would show on its node
        wait_for(lambda node=node: not call(node, "GET", f"/api/v1/tasks/{task_id}")["running"],
                 timeout=60, what=f"the run's end on {node.port}")  # fmt: skip
    # A second run would start within a round of the due time, long past now; two more
    # rounds leave it no room (nothing to wait for: it must not come at all).
    time.sleep(2 * TICK)
    return call(a, "GET", f"/api/v1/tasks/{task_id}")


def test_a_task_every_node_holds_fires_once(nodes, _fake_llm_server, redis_server):
    [seeded] = [t for t in tasks_on_disk(nodes[0]) if t["name"] == SEEDED]
    done = settled(nodes, seeded["id"])
    # Its one time (on a slow machine it may have fired before this test read the file).
    assert claimant(redis_server, seeded, seeded["at"][0]) in NAMES
    assert (done["last_status"], done["last_result"]) == ("success", f"{SEEDED} done.")
    assert done["next_run"] is None  # its one time is used
    assert runs_of(_fake_llm_server, SEEDED) == 1
    assert chats_named(nodes[0], SEEDED) == [done["chat_id"]]
    [on_disk] = [t for t in tasks_on_disk(nodes[0]) if t["id"] == seeded["id"]]
    assert on_disk["last_status"] == "success" and on_disk["running_since"] is None


def test_a_task_made_on_node_a_is_known_everywhere_and_fires_once(
    nodes, _fake_llm_server, redis_server
):
    a = nodes[0]
    soon = (datetime.now(UTC) + timedelta(seconds=3)).isoformat()
    made = call(a, "POST", "/api/v1/tasks", {"name": "Once", "prompt": "Report for Once.",
                                             "kind": "planned", "at": [soon]})  # fmt: skip
    for node in nodes:  # every node reads it from the shared file, at once
        shown = call(node, "GET", f"/api/v1/tasks/{made['id']}")
        assert (shown["name"], shown["next_run"]) == ("Once", made["next_run"])
    done = settled(nodes, made["id"])
    assert claimant(redis_server, made, made["next_run"]) in NAMES
    assert (done["last_status"], done["last_result"]) == ("success", "Once done.")
    assert runs_of(_fake_llm_server, "Once") == 1
    assert chats_named(a, "Once") == [done["chat_id"]]
    for node in nodes:
        assert call(node, "GET", f"/api/v1/tasks/{made['id']}")["last_status"] == "success"


def test_tasks_made_on_three_nodes_at_once_are_all_kept(nodes):
    """Each node writes tasks.json whole: without the lock and the read before the write,
    a node's write would drop the tasks another node added meanwhile."""
    before = {t["id"] for t in tasks_on_disk(nodes[0])}
    go = threading.Barrier(len(nodes) * 4)

    def make(node: ServerProcess, number: int) -> str:
        go.wait(30)
        made = call(
            node,
            "POST",
            "/api/v1/tasks",
            {"name": f"Adhoc {node.port}-{number}", "prompt": "Later.", "kind": "adhoc"},
        )
        return str(made["id"])

    with ThreadPoolExecutor(len(nodes) * 4) as pool:
        made = set(pool.map(make, [n for n in nodes for _ in range(4)], range(len(nodes) * 4)))
    assert len(made) == 12
    on_disk = {t["id"] for t in tasks_on_disk(nodes[0])}
    assert on_disk == before | made
    for node in nodes:
        assert {t["id"] for t in call(node, "GET", "/api/v1/tasks")["tasks"]} == on_disk
