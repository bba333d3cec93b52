"""Each person's scheduled tasks and notifications, against a real run_ui.py with an admin
and members: through the page's routes, the API, the agents' scheduler tool and Socket.IO,
each sees and touches only their own; another's task id is a 404; a member's task runs in
a chat of theirs; a notification reaches its owner's pages alone.

The test process's shared server with accounts serves the module (a start costs seconds;
tests/support/shared_accounts.py); each test makes the members it uses, so no test depends
on another's accounts. The fake model server is shared: each test scripts its replies and
runs one thing at a time."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import shared_accounts
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.live_web import ack, close_socket, log_in
from tests.support.members import Heard, Member, api, page, socket_of
from tests.support.server_process import ServerProcess
from tests.support.shared_accounts import ADMIN, ADMIN_KEY

ADHOC = {"prompt": "Say hello.", "kind": "adhoc", "dedicated_chat": True}


@pytest.fixture(scope="module")
def cadre(accounts_server: ServerProcess) -> Iterator[ServerProcess]:
    # notify_long_run 0: every finished run is news (a "Run finished" notification).
    with shared_accounts.for_module(accounts_server, notify_long_run=0) as server:
        yield server


@pytest.fixture
def fake(_fake_llm_server: FakeLLMServer) -> FakeLLMServer:
    _fake_llm_server.reset()
    _fake_llm_server.add_rule(model_is("util-model"), Reply("A chat"))  # naming chats
    return _fake_llm_server


def make_task(cadre: ServerProcess, key: str, name: str) -> dict[str, Any]:
    made = api(cadre, "POST", "/tasks", key, {"name": name, **ADHOC})
    assert made.status_code == 201, made.text
    return made.json()


def ran(cadre: ServerProcess, key: str, task_id: str) -> dict[str, Any]:
    """The task once its run (started now) has ended."""
    started = api(cadre, "POST", f"/tasks/{task_id}/run", key)
    assert started.status_code == 202, started.text

    def ended() -> dict[str, Any] | None:
        shown = api(cadre, "GET", f"/tasks/{task_id}", key).json()
        return None if shown["running"] or not shown["last_status"] else shown

    return wait_for(ended, timeout=60, what="the task's run")


def test_each_person_sees_and_touches_only_their_own_tasks(cadre):
    ann, bea = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)

    def listed_by_key(key: str) -> set[str]:
        return {t["id"] for t in api(cadre, "GET", "/tasks", key).json()["tasks"]}

    admins_before = listed_by_key(ADMIN_KEY)  # the shared server's admin may have some
    anns = make_task(cadre, ann.key, "Ann's")
    # Bea makes hers in the Scheduler panel (the page's routes, her login).
    made = page(bea.browser, cadre, "POST", "/api/tasks", {"name": "Bea's", **ADHOC})
    assert made.status_code == 201, made.text
    beas = made.json()
    admins = make_task(cadre, ADMIN_KEY, "The admin's")
    assert (anns["owner"], beas["owner"], admins["owner"]) == (ann.name, bea.name, ADMIN)
    assert listed_by_key(ann.key) == {anns["id"]}
    assert listed_by_key(bea.key) == {beas["id"]}
    # Admins included: their own alone, nobody else's.
    assert listed_by_key(ADMIN_KEY) == admins_before | {admins["id"]}
    on_page = page(ann.browser, cadre, "GET", "/api/tasks").json()["tasks"]
    assert [t["id"] for t in on_page] == [anns["id"]]

    # Another's task id is a 404 everywhere, as one that does not exist; nothing changes.
    other = beas["id"]
    for method, path, body in (("GET", "", None), ("PATCH", "", {"name": "Mine now"}),
                               ("POST", "/run", None), ("DELETE", "", None)):  # fmt: skip
        by_key = api(cadre, method, f"/tasks/{other}{path}", ann.key, body)
        assert by_key.status_code == 404, (method, path, by_key.text)
        assert "no task" in by_key.json()["error"]
        by_page = page(ann.browser, cadre, method, f"/api/tasks/{other}{path}", body)
        assert by_page.status_code == 404, (method, path, by_page.text)
        by_admin = api(cadre, method, f"/tasks/{other}{path}", ADMIN_KEY, body)
        assert by_admin.status_code == 404, (method, path, by_admin.text)
    kept = api(cadre, "GET", f"/tasks/{other}", bea.key).json()
    assert (kept["name"], kept["last_status"]) == ("Bea's", "")
    # Her own: changed and deleted.
    renamed = page(bea.browser, cadre, "PATCH", f"/api/tasks/{other}", {"name": "Bea's too"})
    assert renamed.status_code == 200 and renamed.json()["owner"] == bea.name
    assert api(cadre, "DELETE", f"/tasks/{other}", bea.key).status_code == 200
    assert listed_by_key(bea.key) == set()
    # The owner is Cadre's to keep: a body naming one is refused, never taken.
    refused = api(cadre, "POST", "/tasks", bea.key, {"name": "x", "owner": ann.name, **ADHOC})
    assert refused.status_code == 400 and "owner" in refused.json()["error"]


def test_a_members_task_runs_in_a_chat_of_theirs_and_reports_to_them_alone(cadre, fake):
    ann, bea = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    anns_page, beas_page = socket_of(ann.browser, cadre), socket_of(bea.browser, cadre)
    try:
        to_ann = Heard(anns_page, "notifications:delta")
        to_bea = Heard(beas_page, "notifications:delta")
        task = make_task(cadre, ann.key, "Greeting")
        fake.script(Reply(answer("Hello from the task.")))
        done = ran(cadre, ann.key, task["id"])
        assert (done["last_status"], done["last_result"]) == ("success", "Hello from the task.")
        chat_id = done["chat_id"]
        # The run's chat is Ann's: in her list, a 404 for Bea and for the admin.
        listed = {c["id"] for c in api(cadre, "GET", "/chats", ann.key).json()["chats"]}
        assert chat_id in listed
        assert api(cadre, "GET", f"/chats/{chat_id}", bea.key).status_code == 404
        assert api(cadre, "GET", f"/chats/{chat_id}", ADMIN_KEY).status_code == 404
        # Its report is Ann's notification: on her page, not on Bea's.
        heard = to_ann.wait(lambda d: d.get("item", {}).get("task") == task["id"])
        report = next(d["item"] for d in heard if d.get("item", {}).get("task") == task["id"])
        assert (report["title"], report["chat_id"]) == ("Task 'Greeting' finished", chat_id)
        time.sleep(0.5)  # the pusher's round: anything meant for Bea would be here by now
        assert all(d.get("item", {}).get("chat_id") != chat_id for d in to_bea.items)
        assert task["id"] not in json.dumps(ack(beas_page, "notifications:list"))
        # A second run continues the same chat of hers (dedicated_chat).
        fake.script(Reply(answer("Hello again.")))
        assert ran(cadre, ann.key, task["id"])["chat_id"] == chat_id
    finally:
        close_socket(anns_page)
        close_socket(beas_page)


def test_each_member_gets_only_their_own_notifications(cadre, fake):
    ann, bea = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    anns_page, beas_page = socket_of(ann.browser, cadre), socket_of(bea.browser, cadre)
    try:
        to_ann = Heard(anns_page, "notifications:delta")
        to_bea = Heard(beas_page, "notifications:delta")
        fake.script(Reply(answer("Ann's answer.")), Reply(answer("Bea's answer.")))
        anns = api(cadre, "POST", "/message", ann.key, {"message": "work", "wait": True}).json()
        assert anns["response"] == "Ann's answer."
        beas = api(cadre, "POST", "/message", bea.key, {"message": "work", "wait": True}).json()
        assert beas["response"] == "Bea's answer."

        def finished(chat_id: str):
            return lambda d: d.get("item", {}).get("chat_id") == chat_id

        to_ann.wait(finished(anns["context_id"]))
        to_bea.wait(finished(beas["context_id"]))
        time.sleep(0.5)  # the pusher's round: a misrouted delta would be here by now
        assert not any(finished(beas["context_id"])(d) for d in to_ann.items)
        assert not any(finished(anns["context_id"])(d) for d in to_bea.items)

        # The list: each their own.
        anns_list = ack(anns_page, "notifications:list")
        beas_list = ack(beas_page, "notifications:list")
        assert {i["chat_id"] for i in anns_list["items"]} == {anns["context_id"]}
        assert {i["chat_id"] for i in beas_list["items"]} == {beas["context_id"]}
        assert (anns_list["unread"], beas_list["unread"]) == (1, 1)
        # Marking or clearing is one's own: Bea cannot mark Ann's entry, and clearing hers
        # leaves Ann's.
        anns_entry = anns_list["items"][0]["id"]
        assert ack(beas_page, "notifications:read", {"ids": [anns_entry]})["ids"] == []
        assert ack(beas_page, "notifications:clear")["ok"]
        assert ack(anns_page, "notifications:list")["unread"] == 1
        assert ack(anns_page, "notifications:read", {"ids": [anns_entry]})["ids"] == [anns_entry]
        to_ann.wait(lambda d: d["kind"] == "read")
        assert not any(d["kind"] in ("read", "cleared") for d in to_ann.items
                       if d.get("ids") != [anns_entry])  # fmt: skip
        assert not any(d["kind"] == "read" for d in to_bea.items)
        # Each person's history is a file in their space (the admin's is usr/'s).
        assert (cadre.usr_dir / "users" / ann.name / "notifications.json").exists()
    finally:
        close_socket(anns_page)
        close_socket(beas_page)


def test_the_agents_scheduler_tool_works_on_its_chat_owners_tasks(cadre, fake):
    ann, bea = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    beas = make_task(cadre, bea.key, "Bea's secret errand")
    fake.script(
        Reply(reply("scheduler:create", name="Ann's report", prompt="Write it.", kind="adhoc")),
        Reply(reply("scheduler:list")),
        Reply(reply("scheduler:delete", task_id=beas["id"])),
        Reply(answer("Done.")),
    )
    said = api(cadre, "POST", "/message", ann.key, {"message": "plan it", "wait": True})
    assert said.json()["response"] == "Done.", said.text
    [made] = api(cadre, "GET", "/tasks", ann.key).json()["tasks"]
    assert (made["name"], made["owner"]) == ("Ann's report", ann.name)
    # The list the agent read held Ann's task alone; Bea's stays hers, unharmed.
    listing = str(fake.chat_requests("chat-model")[2].body["messages"])
    assert made["id"] in listing and beas["id"] not in listing
    refused = str(fake.chat_requests("chat-model")[3].body["messages"])
    assert f"no task '{beas['id']}'" in refused
    assert [t["id"] for t in api(cadre, "GET", "/tasks", bea.key).json()["tasks"]] == [beas["id"]]


def test_a_leaving_members_tasks_go_with_their_data(cadre):
    ann, bea, cid = (Member(cadre, ADMIN_KEY) for _ in range(3))
    anns, cids = make_task(cadre, ann.key, "Ann's"), make_task(cadre, cid.key, "Cid's")
    handed = api(cadre, "DELETE", f"/users/{ann.name}", ADMIN_KEY,
                 {"data": "hand_over", "to": bea.name})  # fmt: skip
    assert handed.status_code == 200, handed.text
    [got] = api(cadre, "GET", "/tasks", bea.key).json()["tasks"]
    assert (got["id"], got["owner"]) == (anns["id"], bea.name)
    gone = api(cadre, "DELETE", f"/users/{cid.name}", ADMIN_KEY, {"data": "delete"})
    assert gone.status_code == 200, gone.text
    # A new account of the same name starts with nothing of the old one's.
    again = api(cadre, "POST", "/users", ADMIN_KEY,
                {"name": cid.name, "password": "a fresh password"})  # fmt: skip
    assert again.status_code == 201
    key = page(log_in(cadre, cid.name, "a fresh password"), cadre, "POST",
               f"/api/users/{cid.name}/keys", {"label": "x"}).json()["key"]  # fmt: skip
    assert cids["id"] not in str(api(cadre, "GET", "/tasks", key).json())
