"""Projects through the web layer: made in the panel's routes, then chats in them started
from the page's socket, the external API and the OpenAI-compatible endpoint, with the
fake model server recording what the agents were told."""

from __future__ import annotations

import json

import pytest

from memory import memories
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is

KEY = {"X-API-Key": "api-secret"}
#: Where the chat's commands run, and the project's secret given to one.
COMMAND = "pwd; echo token=§§secret(DEPLOY_TOKEN)"


@pytest.fixture(autouse=True)
def _api_key(monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    # Keywords only: the memory test needs no embedding model.
    monkeypatch.setenv("CADRE_EMBED_API_BASE", "")
    monkeypatch.setenv("CADRE_EMBED_API_KEY", "")


def make(http, name: str, **fields) -> dict:
    response = http.post("/api/projects", json={"name": name, **fields})
    assert response.status_code == 201, response.json
    return response.json


def agent_calls(llm) -> list:
    """The agents' model calls (not the utility model's)."""
    return llm.chat_requests("chat-model")


def system_prompts(llm) -> list[str]:
    return [r.messages[0]["content"] for r in agent_calls(llm)]


def test_instructions_reach_every_agent_and_the_chat_works_in_the_project_folder(
    http, llm, usr_dir
):
    made = make(http, "alpha", description="The parser rewrite",
                instructions="Write every answer in French.",
                secrets={"DEPLOY_TOKEN": "tok-alpha-12345"})  # fmt: skip
    assert made["work_folder"] == str(usr_dir / "projects" / "alpha" / "work")
    llm.add_rule(model_is("util-model"), Reply("A name"))
    llm.script(
        Reply(reply("code_execution_tool", runtime="terminal", session=0, code=COMMAND)),
        Reply(reply("call_subordinate", message="Check the folder.")),
        Reply(answer("Vérifié.")),  # the subordinate's answer
        Reply(answer("Fini.")),
    )
    sent = http.post("/api/v1/message", headers=KEY,
                     json={"message": "Where do you work?", "project": "alpha"})  # fmt: skip
    assert sent.status_code == 200 and sent.json["response"] == "Fini."
    prompts = system_prompts(llm)
    assert len(prompts) == 4  # A0, A0, A1, A0: the subordinate is told too
    for prompt in prompts:
        assert "## Project: alpha" in prompt and "The parser rewrite" in prompt
        assert "Write every answer in French." in prompt
    seen = [r.messages[-1]["content"] for r in agent_calls(llm)]
    assert str(usr_dir / "projects" / "alpha" / "work") in seen[1]  # pwd's output
    assert "token=***" in seen[1]  # the project's secret was given to the command, masked
    assert "tok-alpha-12345" not in json.dumps([r.body for r in llm.chat_requests()])

    chat_id = sent.json["context_id"]
    listed = http.get("/api/v1/chats", headers=KEY).json["chats"]
    assert [(c["id"], c["project"]) for c in listed] == [(chat_id, "alpha")]
    saved_text = (usr_dir / "chats" / chat_id / "chat.json").read_text()
    assert json.loads(saved_text)["project"] == "alpha" and "tok-alpha-12345" not in saved_text
    # The Files panel's work folder, with the chat open, is the project's.
    (usr_dir / "projects" / "alpha" / "work" / "notes.txt").write_text("x")
    listed = http.get(f"/api/files/list?root=work&path=&chat={chat_id}").json["entries"]
    assert [e["name"] for e in listed] == ["notes.txt"]
    assert http.get("/api/files/list?root=work&path=").json["entries"] == []

    # An edit is in the next prompt; another chat of no project is told nothing of it.
    http.patch("/api/projects/alpha", json={"instructions": "Answer in German."})
    llm.script(Reply(answer("Gut.")), Reply(answer("Plain.")))
    http.post("/api/v1/message", headers=KEY, json={"message": "Again", "context_id": chat_id})
    http.post("/api/v1/message", headers=KEY, json={"message": "Outside"})
    *_, inside, outside = system_prompts(llm)
    assert "Answer in German." in inside and "French" not in inside
    assert "Project" not in outside and "German" not in outside


def test_memories_and_knowledge_stay_in_their_project(http, llm, usr_dir):
    made = make(http, "alpha")
    make(http, "beta")
    knowledge = usr_dir / "projects" / "alpha" / "knowledge"
    assert made["knowledge_folder"] == str(knowledge)
    (knowledge / "build.md").write_text("Alpha notes: the build runs meson, then ninja.\n")
    llm.add_rule(model_is("util-model"), Reply("NONE"))
    llm.script(
        Reply(reply("memory_save", text="The alpha build uses meson")),
        Reply(answer("Saved.")),
        Reply(reply("memory_load", query="build meson")),
        Reply(answer("Nothing.")),
        Reply(reply("memory_load", query="build meson")),
        Reply(answer("Found.")),
    )
    calls = []
    for project in ("alpha", "beta", "alpha"):
        before = len(agent_calls(llm))
        asked = {"message": "How does the build run meson?", "project": project}
        sent = http.post("/api/v1/message", headers=KEY, json=asked)
        assert sent.status_code == 200, sent.json
        calls.append(json.dumps([r.messages for r in agent_calls(llm)[before:]]))
    results = [r.messages[-1]["content"] for r in agent_calls(llm) if len(r.messages) > 2]
    assert "Saved as memory" in results[0]
    assert 'No memories match \\"build meson\\"' in json.dumps(results[1])  # none of alpha's
    assert "The alpha build uses meson" in results[2]  # a new chat in alpha finds it
    assert "Alpha notes" in calls[0] and "Alpha notes" in calls[2]  # recalled knowledge
    assert "Alpha notes" not in calls[1] and "alpha build" not in calls[1]
    assert memories.store_at(usr_dir / "memory" / "beta" / "memory.db").count() == 0


def test_a_new_chat_in_a_project_from_the_page_and_the_openai_endpoint(http, sio, llm):
    make(http, "alpha", instructions="Be brief.")
    ack = sio.emit("chat:new", {"project": "alpha"}, callback=True)
    assert ack["ok"] and ack["chat"]["project"] == "alpha"
    refused = sio.emit("chat:new", {"project": "nowhere"}, callback=True)
    assert not refused["ok"] and "no project named 'nowhere'" in refused["error"]

    llm.add_rule(model_is("util-model"), Reply("A name"))
    llm.script(Reply(answer("Short.")))
    bearer = {"Authorization": "Bearer api-secret"}
    body = {"model": "cadre", "messages": [{"role": "user", "content": "Hi"}],
            "metadata": {"project": "alpha", "ticket": "T-1"}}  # fmt: skip
    done = http.post("/v1/chat/completions", headers=bearer, json=body)
    assert done.status_code == 200, done.json
    assert "Be brief." in system_prompts(llm)[-1]
    rows = {c["project"] for c in http.get("/api/v1/chats", headers=KEY).json["chats"]}
    assert rows == {"alpha"}
    chat = next(c for c in http.get("/api/v1/chats", headers=KEY).json["chats"]
                if c["id"] != ack["chat"]["id"])  # fmt: skip
    variables = http.get(f"/api/v1/chats/{chat['id']}", headers=KEY).json["variables"]
    assert variables == {"ticket": "T-1"}  # `project` chose the project; it is no variable
    body["metadata"] = {"project": "ghost"}
    assert http.post("/v1/chat/completions", headers=bearer, json=body).status_code == 400


def test_a_v1_conversation_continued_in_another_project_goes_on_in_a_chat_of_that_one(http, llm):
    """A conversation's earlier turns find its chat; asked with another metadata.project, it
    goes on in a new chat of that project, and the first chat (of another project, with its
    own instructions, secrets and memory) is not touched."""
    make(http, "alpha", instructions="Answer as alpha.")
    make(http, "beta", instructions="Answer as beta.")
    llm.add_rule(model_is("util-model"), Reply("A name"))
    llm.script(Reply(answer("Hello from alpha.")), Reply(answer("Hello from beta.")))
    bearer = {"Authorization": "Bearer api-secret"}
    first = [{"role": "user", "content": "Hi"}]
    said = http.post(
        "/v1/chat/completions",
        headers=bearer,
        json={"model": "cadre", "messages": first, "metadata": {"project": "alpha"}},
    )
    assert said.status_code == 200, said.json
    turn = [*first, {"role": "assistant", "content": "Hello from alpha."},
            {"role": "user", "content": "And you?"}]  # fmt: skip
    again = http.post(
        "/v1/chat/completions",
        headers=bearer,
        json={"model": "cadre", "messages": turn, "metadata": {"project": "beta"}},
    )
    assert again.status_code == 200, again.json
    chats = http.get("/api/v1/chats", headers=KEY).json["chats"]
    assert sorted(c["project"] for c in chats) == ["alpha", "beta"]
    users = {c["project"]: [i["content"] for i in http.get(f"/api/v1/chats/{c['id']}",
             headers=KEY).json["log"] if i["type"] == "user"] for c in chats}  # fmt: skip
    assert users["alpha"] == ["Hi"]
    assert users["beta"][-1].startswith("And you?")
    assert "Answer as beta." in system_prompts(llm)[-1]


def test_a_project_with_chats_is_not_deleted(http, sio, llm, usr_dir):
    make(http, "alpha", secrets={"TOKEN": "s3cret"})
    shown = http.get("/api/projects/alpha").json
    assert shown["secrets"] == ["TOKEN"] and "s3cret" not in json.dumps(shown)
    chat = sio.emit("chat:new", {"project": "alpha"}, callback=True)["chat"]
    refused = http.delete("/api/projects/alpha")
    assert refused.status_code == 409 and "1 chat(s)" in refused.json["error"]
    assert (usr_dir / "projects" / "alpha" / "settings.json").is_file()
    assert http.get("/api/projects").json["projects"][0]["chats"] == 1
    assert sio.emit("chat:delete", {"chat_id": chat["id"]}, callback=True)["ok"]
    wait_for(lambda: http.delete("/api/projects/alpha").status_code == 200, what="deleted")
    assert not (usr_dir / "projects" / "alpha").exists()
    assert http.get("/api/projects").json["projects"] == []
    assert http.delete("/api/projects/alpha").status_code == 404


def test_bad_projects_are_refused_with_the_reason(http, tmp_path):
    assert "invalid project name" in http.post("/api/projects", json={"name": "../x"}).json["error"]
    make(http, "alpha")
    taken = http.post("/api/projects", json={"name": "alpha"})
    assert taken.status_code == 400 and "exists already" in taken.json["error"]
    missing = http.post("/api/projects", json={"name": "beta", "work_dir": str(tmp_path / "no")})
    assert missing.status_code == 400 and "does not exist" in missing.json["error"]
    ghost = http.post("/api/projects", json={"name": "beta", "agent_profile": "ghost"})
    assert ghost.status_code == 400 and "ghost" in ghost.json["error"]
    assert [p["name"] for p in http.get("/api/projects").json["projects"]] == ["alpha"]
    mine = tmp_path / "code"
    mine.mkdir()
    moved = http.patch("/api/projects/alpha", json={"work_dir": str(mine)})
    assert moved.status_code == 200 and moved.json["work_folder"] == str(mine.resolve())
    assert moved.json["own_work_folder"] is False


def test_the_external_api_manages_projects_with_its_key(http):
    body = {"name": "ops", "instructions": "Be careful."}
    assert http.post("/api/v1/projects", json=body).status_code == 401
    made = http.post("/api/v1/projects", json=body, headers=KEY)
    assert made.status_code == 201 and made.json["instructions"] == "Be careful."
    changed = http.patch("/api/v1/projects/ops", json={"description": "Ops"}, headers=KEY)
    assert changed.json["description"] == "Ops" and changed.json["instructions"] == "Be careful."
    assert [p["name"] for p in http.get("/api/v1/projects", headers=KEY).json["projects"]] == [
        "ops"
    ]
    assert http.delete("/api/v1/projects/ops", headers=KEY).json == {"deleted": "ops"}
