"""The server through Flask's test client and Socket.IO's test client."""

from __future__ import annotations

import io
import json

import pytest

from helpers.settings import Settings, load_settings, save_settings
from initialize import ChatFactory
from server.app import create_app
from store.chats import ChatManager
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply, model_is
from tests.support.sockets import ack, received


class Collector:
    """Everything a socket client received, kept across polls."""

    def __init__(self, sio):
        self.sio = sio
        self.events: list[tuple[str, dict]] = []

    def poll(self):
        self.events += [(e["name"], e["args"][0]) for e in self.sio.get_received()]
        return self.events

    def items(self, chat_id):
        merged: dict[int, dict] = {}
        for name, data in self.poll():
            if name == "log" and data["chat_id"] == chat_id:
                for item in data["items"]:
                    if item["version"] >= merged.get(item["no"], {}).get("version", -1):
                        merged[item["no"]] = item
        return [merged[n] for n in sorted(merged)]


# -- HTTP ----------------------------------------------------------------------


def test_health_answers_json(http):
    response = http.get("/health")
    assert response.status_code == 200
    # `ready`: whether this process has imported what a first model call needs (it may have)
    assert response.json == {"status": "ok", "ready": response.json["ready"], "chats": 0}
    assert isinstance(response.json["ready"], bool)


def test_settings_are_masked_and_secrets_kept(http, usr_dir):
    save_settings(Settings(api_key="k-secret", agent_profile="researcher"))
    shown = http.get("/api/settings").json
    assert shown["api_key"] == "***" and shown["agent_profile"] == "researcher"
    assert shown["chat_api_key"] == "***"  # from the environment, masked all the same
    assert "k-secret" not in json.dumps(shown) and "test-key" not in json.dumps(shown)
    changed = http.post("/api/settings", json={"agent_profile": "developer", "api_key": "***"})
    assert changed.status_code == 200 and changed.json["agent_profile"] == "developer"
    stored = json.loads((usr_dir / "settings.json").read_text())
    assert stored["api_key"] == "k-secret" and stored["agent_profile"] == "developer"
    assert "test-key" not in json.dumps(stored)  # environment overrides never reach the file


def test_saved_settings_reach_idle_chats(http, server, llm):
    chats = server.app.extensions["cadre.chats"]
    chat = chats.new_chat()
    assert chat.agent0.config.profile == "agent0"
    http.post("/api/settings", json={"agent_profile": "researcher"})
    wait_for(lambda: chat.agent0.config.profile == "researcher", what="the new profile")
    assert chat.config.settings.agent_profile == "researcher"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"chat_ctx_length": -1}, "chat_ctx_length"),
        ({"no_such_field": 1}, "unknown setting(s): no_such_field"),
        ("not an object", "JSON object"),
    ],
)
def test_bad_settings_are_refused_and_nothing_changes(http, usr_dir, body, message):
    before = load_settings()
    response = http.post("/api/settings", json=body)
    assert response.status_code == 400 and message in response.json["error"]
    assert load_settings() == before


def test_profiles_list_shows_broken_ones_with_the_reason(http, usr_dir):
    broken = usr_dir / "agents" / "broken"
    broken.mkdir(parents=True)
    (broken / "agent.yaml").write_text("title: [x\n")
    profiles = {p["name"]: p for p in http.get("/api/profiles").json}
    assert profiles["researcher"]["available"] and profiles["researcher"]["title"] == "Researcher"
    assert not profiles["broken"]["available"] and "not valid YAML" in profiles["broken"]["error"]


def test_attachments_are_stored_in_the_chat_folder(http, server, usr_dir):
    chat = server.app.extensions["cadre.chats"].new_chat()
    upload = http.post(
        f"/api/chats/{chat.id}/attachments",
        data={"file": (io.BytesIO(b"a,b\n1,2\n"), "../../evil name.csv")},
    )
    assert upload.status_code == 200
    path = upload.json["path"]
    assert path == "attachments/evil_name.csv"
    assert (usr_dir / "chats" / chat.id / path).read_bytes() == b"a,b\n1,2\n"
    again = http.post(f"/api/chats/{chat.id}/attachments",
                      data={"file": (io.BytesIO(b"x"), "evil name.csv")})  # fmt: skip
    assert again.json["path"] == "attachments/evil_name-1.csv"
    missing = http.post(f"/api/chats/{chat.id}/attachments", data={})
    assert missing.status_code == 400
    assert http.post("/api/chats/nope/attachments", data={}).status_code == 404


def test_export_import_and_a_refused_import(http, server):
    chats = server.app.extensions["cadre.chats"]
    chat = chats.new_chat()
    chats.rename(chat.id, "Exported")
    document = http.get(f"/api/chats/{chat.id}/export")
    assert "attachment" in document.headers["Content-Disposition"]
    imported = http.post("/api/chats/import", json=document.json)
    assert imported.status_code == 200 and imported.json["chat"]["name"] == "Exported (imported)"
    assert imported.json["chat"]["id"] != chat.id
    count = len(chats.registry)
    refused = http.post("/api/chats/import", json={"something": "else"})
    assert refused.status_code == 400 and "not a Cadre chat export" in refused.json["error"]
    assert len(chats.registry) == count


def test_context_shows_the_last_prompt(http, server, llm):
    chats = server.app.extensions["cadre.chats"]
    chat = chats.new_chat()
    llm.script(Reply(answer("hi")))
    from core.agent_types import UserMessage

    chat.communicate(UserMessage("hello")).result(30)
    shown = http.get(f"/api/chats/{chat.id}/context?agent=0").json
    assert shown["messages"] == llm.chat_requests("chat-model")[-1].messages  # naming may follow
    assert shown["tokens"] > 100
    assert http.get(f"/api/chats/{chat.id}/context?agent=3").status_code == 404
    assert http.get(f"/api/chats/{chat.id}/context?agent=x").status_code == 400


def test_static_files_never_leave_the_webui_folder(http):
    for path in ("/js/../../agent.py", "/vendor/%2e%2e/%2e%2e/agent.py", "/css/..%2f..%2fagent.py"):
        assert http.get(path).status_code == 404


def test_unexpected_errors_have_no_traceback(http, server, monkeypatch):
    chats = server.app.extensions["cadre.chats"]

    def boom(*_args):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(chats, "import_chat", boom)
    response = http.post("/api/chats/import", json={"x": 1})
    assert response.status_code == 500
    assert "incident" in response.json["error"] and "secret" not in response.get_data(True)


# -- Socket.IO -----------------------------------------------------------------


def test_chat_lifecycle_over_the_socket(sio, llm):
    assert ack(sio, "chats:list") == {"ok": True, "chats": [], "damaged": []}
    created = ack(sio, "chat:new")
    chat_id = created["chat"]["id"]
    sub = ack(sio, "chat:subscribe", {"chat_id": chat_id})
    assert sub["ok"] and sub["items"] == [] and sub["state"]["running"] is False
    assert sub["reset"] is True  # a first subscription knows no guid: it starts from scratch
    llm.script(Reply(answer("Hello from A0"), chunk_size=3, delay=0.01))
    sent = ack(sio, "chat:send", {"chat_id": chat_id, "message": "hi"})
    assert sent == {"ok": True, "intervention": False}
    collector = Collector(sio)
    done = "Hello from A0"
    wait_for(lambda: any(i["type"] == "response" and i["content"] == done
                         for i in collector.items(chat_id)), what="the answer")  # fmt: skip
    wait_for(lambda: any(n == "state" and not d["running"] for n, d in collector.poll()),
             what="the chat to be idle")  # fmt: skip
    kinds = [i["type"] for i in collector.items(chat_id)]
    assert kinds[:3] == ["user", "agent", "response"]
    # The answer streamed: several log events carried the growing response.
    growing = [i["content"] for n, d in collector.events if n == "log" for i in d["items"]
               if i["type"] == "response"]  # fmt: skip
    assert len(set(growing)) > 1
    deltas = [d for n, d in collector.events if n == "chats:delta"]
    assert any(d["chat"].get("running") for d in deltas)


def test_resubscribing_with_a_version_sends_only_what_is_newer(sio, server, llm):
    chats = server.app.extensions["cadre.chats"]
    chat = chats.new_chat()
    from core.agent_types import UserMessage

    llm.add_rule(model_is("util-model"), Reply("Numbers"))
    llm.script(Reply(answer("one")), Reply(answer("two")))
    chat.communicate(UserMessage("first")).result(30)
    wait_for(lambda: chat.name == "Numbers", what="the automatic name")
    first = ack(sio, "chat:subscribe", {"chat_id": chat.id})
    seen_version = first["version"]
    chat.communicate(UserMessage("second")).result(30)
    again = ack(sio, "chat:subscribe",
                {"chat_id": chat.id, "since": seen_version, "guid": first["guid"]})  # fmt: skip
    assert again["items"] and all(i["version"] > seen_version for i in again["items"])
    assert {i["content"] for i in again["items"] if i["type"] == "user"} == {"second"}
    stale = ack(sio, "chat:subscribe", {"chat_id": chat.id, "since": 5, "guid": "old"})
    assert stale["reset"] is True and len(stale["items"]) == len(chat.log.items)


def test_a_message_while_running_is_an_intervention(sio, server, llm):
    chat_id = ack(sio, "chat:new")["chat"]["id"]
    llm.script(Reply(answer("slow " * 30), chunk_size=4, delay=0.05), Reply(answer("redirected")))
    ack(sio, "chat:send", {"chat_id": chat_id, "message": "go"})
    chat = server.app.extensions["cadre.chats"].get(chat_id)
    wait_for(lambda: any(i.type == "response" for i in chat.log.items), what="streaming")
    again = {"chat_id": chat_id, "message": "stop, other", "broadcast": -1}
    assert ack(sio, "chat:send", again) == {"ok": True, "intervention": True}
    wait_for(lambda: not chat.running and any(
        i.type == "response" and i.content == "redirected" for i in chat.log.items),
        what="the redirected answer")  # fmt: skip


@pytest.mark.parametrize(
    ("event", "data", "error"),
    [
        ("chat:send", {"chat_id": "x"}, "message: Field required"),
        ("chat:send", {"chat_id": "../x", "message": "m"}, "chat_id"),
        ("chat:send", {"chat_id": "nope", "message": "m"}, "no chat with id 'nope'"),
        ("chat:send", {"chat_id": "nope", "message": "m", "broadcast": 7}, "broadcast"),
        ("chat:subscribe", "just a string", "Input should be"),
        ("chat:rename", {"chat_id": "nope", "name": "n"}, "no chat with id"),
        ("chat:stop", {}, "chat_id: Field required"),
    ],
)
def test_bad_payloads_get_a_clear_error(sio, event, data, error):
    reply = sio.emit(event, data, callback=True)
    assert reply["ok"] is False and error in reply["error"]


def test_controls_rename_reset_delete(sio, server, llm):
    chats = server.app.extensions["cadre.chats"]
    chat_id = ack(sio, "chat:new")["chat"]["id"]
    ack(sio, "chat:subscribe", {"chat_id": chat_id})
    llm.script(Reply(answer("slow " * 40), chunk_size=4, delay=0.05))
    ack(sio, "chat:send", {"chat_id": chat_id, "message": "go"})
    chat = chats.get(chat_id)
    wait_for(lambda: chat.running, what="the run")
    for control in ("chat:pause", "chat:resume", "chat:nudge"):
        assert ack(sio, control, {"chat_id": chat_id}) == {"ok": True}
    assert ack(sio, "chat:stop", {"chat_id": chat_id}) == {"ok": True}
    wait_for(lambda: not chat.running, what="the stop")
    assert ack(sio, "chat:rename", {"chat_id": chat_id, "name": "Renamed"}) == {"ok": True}
    assert chats.get(chat_id).name == "Renamed"
    sio.get_received()
    assert ack(sio, "chat:reset", {"chat_id": chat_id}) == {"ok": True}
    assert chats.get(chat_id).log.items == []
    new_guid = chats.get(chat_id).log.guid
    wait_for(lambda: any(e["name"] == "log" and e["args"][0]["guid"] == new_guid
                         for e in sio.get_received()), what="the reset announced")  # fmt: skip
    sio.get_received()
    assert ack(sio, "chat:delete", {"chat_id": chat_id}) == {"ok": True}
    deltas: list[dict] = []
    wait_for(lambda: deltas.extend(received(sio, "chats:delta"))
             or {"kind": "removed", "chat": {"id": chat_id}} in deltas,
             what="the removal pushed")  # fmt: skip


def test_the_page_and_its_files_are_served(http):
    page = http.get("/")
    assert page.status_code == 200 and b'type="module"' in page.data
    script = http.get("/js/app.js")
    assert script.status_code == 200 and "javascript" in script.content_type
    assert http.get("/api/chats/nope/export").status_code == 404


def test_more_events_and_their_errors(sio, server, usr_dir):
    chat_id = ack(sio, "chat:new")["chat"]["id"]
    assert ack(sio, "chat:subscribe", {"chat_id": chat_id})["ok"]
    assert ack(sio, "chat:unsubscribe", {"chat_id": chat_id}) == {"ok": True}
    refused = ack(sio, "chat:continue", {"chat_id": chat_id})
    assert refused["ok"] is False and "not interrupted" in refused["error"]
    hostile = ack(sio, "chat:send", {"chat_id": chat_id, "message": "m",
                                     "attachments": ["../../settings.json"]})  # fmt: skip
    assert hostile["ok"] is False and "attachment refused" in hostile["error"]


def test_damaged_chats_are_listed(llm, runtime, usr_dir):
    folder = usr_dir / "chats" / "broken"
    folder.mkdir(parents=True)
    (folder / "chat.json").write_text("{")
    chats = ChatManager(runtime, ChatFactory(runtime))
    chats.load_saved()
    built = create_app(chats)
    client = built.socketio.test_client(built.app)
    listed = client.emit("chats:list", {}, callback=True)
    assert listed["damaged"] == [{"id": "broken", "reason": listed["damaged"][0]["reason"]}]
    assert "not JSON" in listed["damaged"][0]["reason"]
    client.disconnect()


def test_context_of_a_sibling_is_found_by_its_name(http, server, llm):
    from core.agent_types import UserMessage
    from tests.integration.test_parallel_subordinates import TASKS, delegate_all, task_is

    chats = server.app.extensions["cadre.chats"]
    chat = chats.new_chat()
    llm.add_rule(task_is("Task ONE"), Reply(answer("apple")))
    llm.add_rule(task_is("Task TWO"), Reply(answer("oak")))
    llm.script(delegate_all(*TASKS[:2]), Reply(answer("Done.")))
    chat.communicate(UserMessage("Two lists.")).result(30)
    shown = http.get(f"/api/chats/{chat.id}/context?agent=A1.2").json
    assert (shown["agent"], shown["name"]) == (1, "A1.2")
    assert "Task TWO" in shown["messages"][1]["content"]
    assert http.get(f"/api/chats/{chat.id}/context?agent=A1.3").status_code == 404
    assert http.get(f"/api/chats/{chat.id}/context?agent=A1.x").status_code == 400
