"""The notification history over Socket.IO: what feeds it (notify items with a task, a
failed run, a long run finished), listing, marking read on one page seen by another,
clearing, and the file it is kept in."""

from __future__ import annotations

import json

from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Fail, Reply, model_is
from tests.support.sockets import ack, received


def deltas(client, seen: list[dict]) -> list[dict]:
    """Every `notifications:delta` `client` got so far (gathered into `seen`)."""
    seen += received(client, "notifications:delta")
    return seen


def test_the_history_is_fed_listed_marked_read_and_cleared(http, sio, server, llm, monkeypatch,
                                                          usr_dir):  # fmt: skip
    monkeypatch.setenv("CADRE_NOTIFY_LONG_RUN", "0")  # every finished run is "long"
    monkeypatch.setenv("CADRE_LLM_RETRIES", "0")
    other = server.socketio.test_client(server.app, flask_test_client=http)
    chat_id = ack(sio, "chat:new")["chat"]["id"]
    llm.add_rule(model_is("util-model"), Reply("Report chat"))  # names the chat
    llm.script(Reply(answer("All done.")), Fail(status=401, message="bad provider key"))
    ack(sio, "chat:send", {"chat_id": chat_id, "message": "work"})
    seen: list[dict] = []
    wait_for(lambda: len(deltas(other, seen)) >= 1, what="the finished run")
    ack(sio, "chat:send", {"chat_id": chat_id, "message": "again"})
    wait_for(lambda: len(deltas(other, seen)) >= 2, what="the failed run")
    # The scheduler reports a task's run the way any chat tells the user: a notify item.
    context = server.pusher.chats.get(chat_id)
    server.pusher.chats.runtime.call(
        lambda: context.log.log(
            "notify", "Task 'daily' ran", "Report written", kvps={"type": "success", "task": "t1"}
        )
    )
    wait_for(lambda: len(deltas(other, seen)) >= 3, what="the task's report")

    items = [d["item"] for d in seen]
    assert [(i["kind"], i["type"], i["chat_id"], i["task"]) for i in items] == [
        ("finished", "success", chat_id, None), ("error", "error", chat_id, None),
        ("notify", "success", chat_id, "t1")]  # fmt: skip
    assert items[0]["message"] == "All done."
    # The failure in plain words with what to do, as the chat's error card says it; never
    # the provider's raw text ("litellm.AuthenticationError: ... bad provider key").
    assert items[1]["message"].startswith("The provider refused the API key (HTTP 401).")
    assert "bad provider key" not in items[1]["message"]
    assert [i["title"] for i in items[:2]] == ["Run finished", "Run failed"]
    assert items[2]["title"] == "Task 'daily' ran" and [d["unread"] for d in seen] == [1, 2, 3]

    listed = ack(sio, "notifications:list")
    assert listed["unread"] == 3 and [i["id"] for i in listed["items"]] == [
        i["id"] for i in reversed(items)]  # fmt: skip

    assert ack(sio, "notifications:read", {"ids": [items[1]["id"]]})["ids"] == [items[1]["id"]]
    wait_for(lambda: len(deltas(other, seen)) >= 4, what="the other page hearing of it")
    assert seen[3] == {"kind": "read", "unread": 2, "ids": [items[1]["id"]]}
    bad = ack(sio, "notifications:read", {"ids": "not a list"})
    assert bad["ok"] is False and "ids" in bad["error"]
    assert ack(sio, "notifications:read", {})["ok"]  # every one
    assert ack(sio, "notifications:list")["unread"] == 0

    server.notifications.flush()
    stored = json.loads((usr_dir / "notifications.json").read_text())["items"]
    assert [(i["id"], i["read"]) for i in stored] == [(i["id"], True) for i in items]

    ack(sio, "notifications:clear")
    assert ack(sio, "notifications:list") == {"ok": True, "items": [], "unread": 0}
    wait_for(lambda: deltas(other, seen)[-1]["kind"] == "cleared", what="the clear")
    other.disconnect()


def test_a_failed_task_run_is_one_entry_naming_the_task(server, llm, monkeypatch):
    """The scheduler's report is the entry; the run's own "Run failed" is not added too."""
    from scheduler.tasks import TaskSpec

    monkeypatch.setenv("CADRE_LLM_RETRIES", "0")
    llm.script(Fail(status=400, message="the model is gone"))
    before = len(server.notifications.items())
    task = server.scheduler.create(TaskSpec(name="Doomed", prompt="Try.", kind="adhoc"))
    server.scheduler.run_now(task.id)
    server.scheduler.wait(task.id, 60)
    wait_for(lambda: len(server.notifications.items()) > before, what="the task's entry")
    # Newest first; a "Run failed" would have come before the report.
    added = server.notifications.items()[: len(server.notifications.items()) - before]
    assert [(e.title, e.kind, e.task) for e in added] == [
        ("Task 'Doomed' failed", "notify", task.id)]  # fmt: skip
