"""A scheduled task whose owner's limits refuse its run, through the real app (its routes, a
Flask test client, the agents' runtime and the scripted model server): the run leaves no
chat behind, and the refusal reaches the owner in plain words, as the task's last result
and in their notifications."""

from __future__ import annotations

import json
import threading
from typing import Any

from server.security import auth
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply, last_user_contains, model_is

PASSWORD = "correct horse battery"
WORDS = "You already have 1 chat working, the most your account may run at once (1)"


def logged_in(server, name: str, password: str):
    client = server.app.test_client()
    client.environ_base["HTTP_X_CSRF_TOKEN"] = client.get("/api/csrf").json["token"]
    assert client.post("/login", json={"login": name, "password": password}).status_code == 200
    client.environ_base["HTTP_X_CSRF_TOKEN"] = client.get("/api/csrf").json["token"]
    return client


def test_a_task_refused_by_its_owners_limit_leaves_no_chat_and_says_why(server, usr_dir, llm):
    stored = {"auth_login": "ada", "auth_password": auth.hash_password(PASSWORD)}
    (usr_dir / "settings.json").write_text(json.dumps(stored))
    llm.add_rule(model_is("util-model"), Reply("A chat"))
    held = threading.Event()
    llm.add_rule(last_user_contains("the long job"), Reply(answer("Long done."), gate=held))
    ada = logged_in(server, "ada", PASSWORD)
    assert ada.post("/api/users", json={"name": "ann", "password": "ann's password"}
                    ).status_code == 201  # fmt: skip
    limited = ada.patch("/api/users/ann", json={"limits": {"max_runs": 1}})
    assert limited.status_code == 200, limited.json
    ann = logged_in(server, "ann", "ann's password")
    key = ann.post("/api/users/ann/keys", json={"label": "test"}).json["key"]
    api = server.app.test_client()

    def chat_ids() -> set[str]:
        listed = api.get("/api/v1/chats", headers={"X-API-Key": key}).json["chats"]
        return {c["id"] for c in listed}

    def task_now(task_id: str) -> dict[str, Any]:
        return dict(ann.get(f"/api/tasks/{task_id}").json)

    started = api.post("/api/v1/message", headers={"X-API-Key": key},
                       json={"message": "the long job", "wait": False})  # fmt: skip
    running = started.json["context_id"]
    try:
        task = ann.post("/api/tasks", json={"name": "Report", "prompt": "Write the report.",
                                            "kind": "adhoc"}).json  # fmt: skip
        assert ann.post(f"/api/tasks/{task['id']}/run").status_code == 202
        ended = wait_for(lambda: (t := task_now(task["id"]))["last_status"] and
                         not t["running"] and t, timeout=30, what="the task's run")  # fmt: skip
        # No chat was left for the run that did not start: Ann has her running one alone.
        assert chat_ids() == {running}
        assert ended["last_status"] == "error" and ended["chat_id"] == ""
        assert ended["last_result"].startswith(f"the task did not run: {WORDS}")
        # Ann hears it, naming the task, in the same words.
        page = server.socketio.test_client(server.app, flask_test_client=ann)
        items = page.emit("notifications:list", {}, callback=True)["items"]
        page.disconnect()
        [told] = [item for item in items if item.get("task") == task["id"]]
        assert told["title"] == "Task 'Report' did not run"
        assert WORDS in told["message"] and told["type"] == "error"
    finally:
        held.set()
    wait_for(lambda: not api.get(f"/api/v1/chats/{running}", headers={"X-API-Key": key}
                                 ).json["running"], timeout=30, what="the long job")  # fmt: skip


def test_a_run_refused_in_the_tasks_own_chat_is_told_there(server, usr_dir, llm):
    stored = {"auth_login": "ada", "auth_password": auth.hash_password(PASSWORD)}
    (usr_dir / "settings.json").write_text(json.dumps(stored))
    llm.add_rule(model_is("util-model"), Reply("A chat"))
    held = threading.Event()
    llm.add_rule(last_user_contains("the long job"), Reply(answer("Long done."), gate=held))
    llm.add_rule(last_user_contains("Write the report."), Reply(answer("Reported.")))
    ada = logged_in(server, "ada", PASSWORD)
    assert ada.post("/api/users", json={"name": "ann", "password": "ann's password"}
                    ).status_code == 201  # fmt: skip
    assert ada.patch("/api/users/ann", json={"limits": {"max_runs": 1}}).status_code == 200
    ann = logged_in(server, "ann", "ann's password")
    key = ann.post("/api/users/ann/keys", json={"label": "test"}).json["key"]
    api = server.app.test_client()
    task = ann.post("/api/tasks", json={"name": "Report", "prompt": "Write the report.",
                                        "kind": "adhoc"}).json  # fmt: skip

    def ran() -> dict[str, Any]:
        assert ann.post(f"/api/tasks/{task['id']}/run").status_code == 202
        server.scheduler.wait(task["id"], 30)
        return dict(ann.get(f"/api/tasks/{task['id']}").json)

    first = ran()
    assert (first["last_status"], first["last_result"]) == ("success", "Reported.")
    own_chat = first["chat_id"]
    items = len(api.get(f"/api/v1/chats/{own_chat}", headers={"X-API-Key": key}).json["log"])
    started = api.post("/api/v1/message", headers={"X-API-Key": key},
                       json={"message": "the long job", "wait": False})  # fmt: skip
    running = started.json["context_id"]
    try:
        refused = ran()
        assert refused["last_result"].startswith(f"the task did not run: {WORDS}")
        assert refused["chat_id"] == own_chat
    finally:
        held.set()
    # Told in the task's own chat, as its runs are, which is not marked as the task's
    # any more (the mark would keep its own runs' news out of Ann's notifications).
    after = api.get(f"/api/v1/chats/{own_chat}", headers={"X-API-Key": key}).json
    told = after["log"][items:]
    assert [(i["type"], i["heading"]) for i in told] == [("notify", "Task 'Report' failed")]
    assert told[0]["content"] == refused["last_result"]
    assert server.app.extensions["cadre.chats"].get(own_chat).task_run is None
    assert {c["id"] for c in api.get("/api/v1/chats", headers={"X-API-Key": key}
                                     ).json["chats"]} == {own_chat, running}  # fmt: skip
    wait_for(lambda: not api.get(f"/api/v1/chats/{running}", headers={"X-API-Key": key}
                                 ).json["running"], timeout=30, what="the long job")  # fmt: skip
