"""Tools that involve the user: command approval (API and Socket.IO), wait, notify_user."""

from __future__ import annotations

import pytest

from core.agent_types import UserMessage
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is
from tests.support.sockets import ack, received

KEY = {"X-API-Key": "api-secret"}


@pytest.fixture
def confirm(monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    monkeypatch.setenv("CADRE_CODE_EXEC_CONFIRM", "true")


def agent_requests(llm) -> list:
    """What the agents asked the model (not the utility model naming the chat)."""
    return [r for r in llm.chat_requests() if r.body["model"] != "util-model"]


def touch(name: str) -> str:
    return reply("code_execution_tool", runtime="terminal", code=f"touch {name} && echo made")


def pending_approval(http, chat_id: str) -> str:
    def ask():
        return http.get(f"/api/v1/chats/{chat_id}", headers=KEY).json["pending_approvals"]

    return wait_for(ask, what="a command waiting for approval")[0]


def code_item(http, chat_id: str, item_id: str) -> dict:
    log = http.get(f"/api/v1/chats/{chat_id}", headers=KEY).json["log"]
    return next(i for i in log if i["id"] == item_id)


def test_a_denied_command_never_runs_and_an_approved_one_does(confirm, http, llm, usr_dir):
    work = usr_dir / "workdir"
    llm.add_rule(model_is("util-model"), Reply("Touching files"))
    llm.script(Reply(touch("denied.txt")), Reply(answer("It was denied.")))
    started = http.post("/api/v1/message", headers=KEY, json={"message": "go", "wait": False})
    chat_id = started.json["context_id"]
    item_id = pending_approval(http, chat_id)
    assert code_item(http, chat_id, item_id)["kvps"]["approval"] == "pending"
    assert not (work / "denied.txt").exists()  # not run before it was asked for
    denied = http.post(f"/api/v1/chats/{chat_id}/approve", headers=KEY,
                       json={"item_id": item_id, "approved": False})  # fmt: skip
    assert denied.json == {"approved": False}
    wait_for(lambda: not http.get(f"/api/v1/chats/{chat_id}", headers=KEY).json["running"])
    assert code_item(http, chat_id, item_id)["kvps"]["approval"] == "denied"
    told = agent_requests(llm)[1].messages[-1]["content"]
    assert "The user denied the call code_execution_tool" in told
    assert not (work / "denied.txt").exists()

    llm.script(Reply(touch("approved.txt")), Reply(answer("Made it.")))
    http.post("/api/v1/message", headers=KEY,
              json={"message": "again", "context_id": chat_id, "wait": False})  # fmt: skip
    item_id = pending_approval(http, chat_id)
    assert not (work / "approved.txt").exists()
    http.post(f"/api/v1/chats/{chat_id}/approve", headers=KEY,
              json={"item_id": item_id, "approved": True})  # fmt: skip
    wait_for(lambda: (work / "approved.txt").exists(), what="the approved command")
    wait_for(lambda: len(agent_requests(llm)) == 4, what="the model hearing of it")
    assert "made" in agent_requests(llm)[3].messages[-1]["content"]
    # The same shell ran a later command to its end: the denied one, had it been sent to
    # it at any time while it waited or after, would have run before.
    assert not (work / "denied.txt").exists()


def test_approving_what_does_not_wait_is_refused(confirm, http, sio, server):
    chat = sio.emit("chat:new", {}, callback=True)["chat"]
    answer_ = ack(sio, "chat:approve", {"chat_id": chat["id"], "item_id": "nope", "approved": True})
    assert answer_["ok"] is False and "nothing in this chat waits for approval" in answer_["error"]
    bad = ack(sio, "chat:approve", {"chat_id": chat["id"], "item_id": "x"})
    assert bad["ok"] is False and "approved" in bad["error"]
    api = server.app.test_client().post(
        f"/api/v1/chats/{chat['id']}/approve", headers=KEY, json={"item_id": "../x", "approved": 1}
    )
    assert api.status_code == 400 and "item_id" in api.json["error"]


def test_the_page_approves_over_socketio(confirm, http, sio, llm, usr_dir):
    llm.script(Reply(touch("socket.txt")), Reply(answer("Made it.")))
    chat_id = sio.emit("chat:new", {}, callback=True)["chat"]["id"]
    ack(sio, "chat:subscribe", {"chat_id": chat_id})
    ack(sio, "chat:send", {"chat_id": chat_id, "message": "go"})
    item_id = pending_approval(http, chat_id)
    assert ack(sio, "chat:approve", {"chat_id": chat_id, "item_id": item_id, "approved": True}) == {
        "ok": True}  # fmt: skip
    wait_for(lambda: (usr_dir / "workdir" / "socket.txt").exists(), what="the command")


def test_wait_ends_on_time_and_early_for_a_message(make_context, llm):
    llm.script(
        Reply(reply("wait", seconds=0.2)),
        Reply(reply("wait", until="2000-01-01T00:00:00")),
        Reply(reply("wait", hours=1)),
        Reply(answer("first")),
        Reply(answer("second")),
    )
    context = make_context()
    run = context.communicate(UserMessage("wait a bit"))
    wait_for(lambda: len(llm.chat_requests()) == 3, what="the hour-long wait")
    waits = lambda: [i for i in context.log.items if i.kvps.get("hours") and i.kvps.get("until")]  # noqa: E731
    wait_for(waits, what="the hour-long wait to begin")
    context.communicate(UserMessage("stop waiting"))
    assert run.result(30) in ("first", "second")
    seen = [r.messages[-1]["content"] for r in llm.chat_requests()[1:3]]
    assert "Waited 0 s" in seen[0] and "Waited 0 s" in seen[1]
    later = "\n".join(m["content"] for m in llm.chat_requests()[3].messages[-3:])
    assert "cut short" in later and "stop waiting" in later


def test_notify_user_reaches_every_page(http, sio, server, llm):
    llm.script(
        Reply(reply("notify_user", title="Halfway", message="Tests pass", type="success")),
        Reply(answer("done")),
    )
    other = server.socketio.test_client(server.app, flask_test_client=http)  # watches no chat
    chat_id = sio.emit("chat:new", {}, callback=True)["chat"]["id"]
    ack(sio, "chat:send", {"chat_id": chat_id, "message": "go"})
    deltas = wait_for(lambda: received(other, "notifications:delta"), what="the notification")
    assert [(d["kind"], d["unread"]) for d in deltas] == [("added", 1)]
    item = deltas[0]["item"]
    assert {k: item[k] for k in ("chat_id", "title", "message", "type", "kind", "read")} == {
        "chat_id": chat_id, "title": "Halfway", "message": "Tests pass", "type": "success",
        "kind": "notify", "read": False}  # fmt: skip
    wait_for(lambda: len(agent_requests(llm)) >= 2, what="the model hearing of it")
    assert "did not end your turn" in agent_requests(llm)[1].messages[-1]["content"]
    other.disconnect()
