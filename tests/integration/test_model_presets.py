"""Model presets and a chat's model choice: seen on the fake model server's side, kept
after a restart, followed by subordinates (unless their profile sets its own model), taken
by name through the API and the OpenAI-compatible endpoint, refused in plain words when
unknown."""

from __future__ import annotations

import json

import pytest

from core.agent_types import UserMessage
from helpers.runtime import AgentRuntime
from initialize import ChatFactory
from store import model_choice
from store.chats import ChatManager
from tests.support.agents import answer, make_profile, reply, wait_for
from tests.support.fake_llm import Reply, model_is

KEY = {"X-API-Key": "api-secret"}
#: Same provider as the settings' chat model (openai/chat-model): its address and key.
FAST = {"name": "Fast", "chat_model": "openai/fast-model"}


@pytest.fixture(autouse=True)
def _presets(llm, monkeypatch):
    strong = {"name": "Strong", "chat_model": "openai/strong-model",
              "chat_api_base": llm.base_url, "chat_api_key": "strong-key"}  # fmt: skip
    monkeypatch.setenv("CADRE_MODEL_PRESETS", json.dumps([FAST, strong]))
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    llm.add_rule(model_is("util-model"), Reply("A name"))


@pytest.fixture
def chats(llm, runtime) -> ChatManager:
    return ChatManager(runtime, ChatFactory(runtime))


def ask(context, text: str) -> str:
    return context.communicate(UserMessage(text)).result(30)


def test_a_chat_switched_to_a_preset_calls_that_model_and_keeps_it_after_a_restart(
    chats, llm, usr_dir
):
    llm.add_rule(model_is("chat-model"), Reply(answer("default here")))
    llm.add_rule(model_is("fast-model"), Reply(answer("fast here")))
    context = chats.new_chat()
    assert ask(context, "Who answers?") == "default here"
    chats.choose_model(context, model_choice.checked("fast", context.owner))
    assert model_choice.choice_view(context) == {"preset": "Fast", "model": "",
                                                 "chat_model": "openai/fast-model"}  # fmt: skip
    assert ask(context, "And now?") == "fast here"
    sent = llm.chat_requests("fast-model")
    assert len(sent) == 1 and sent[0].headers["authorization"] == "Bearer test-key"
    # A second process reads the chat from disk: the choice is there, and used.
    runtime = AgentRuntime().start()
    try:
        again = ChatManager(runtime, ChatFactory(runtime))
        again.load_saved()
        restored = again.get(context.id)
        assert model_choice.choice_of(restored) == "Fast"
        assert ask(restored, "Still fast?") == "fast here"
        assert len(llm.chat_requests("fast-model")) == 2
        # Default again: the settings' model.
        again.choose_model(restored, model_choice.checked("Default", None))
        assert ask(restored, "Back?") == "default here"
    finally:
        runtime.stop()


def test_a_subordinate_follows_the_chat_unless_its_profile_sets_its_own_model(chats, llm, usr_dir):
    own = make_profile(usr_dir, "own_model")
    (own / "settings.json").write_text(json.dumps({"chat_model": "openai/own-model"}))
    context = chats.new_chat()
    chats.choose_model(context, "Strong")
    # Replies in order, whichever model asks: each request's model says who called what.
    llm.script(
        Reply(reply("call_subordinate", message="Look into X.", profile="researcher")),
        Reply(answer("X is fine.")),
        Reply(reply("call_subordinate", message="Now Y.", profile="own_model", reset=True)),
        Reply(answer("Y is fine.")),
        Reply(answer("Both are fine.")),
    )
    assert ask(context, "Delegate.") == "Both are fine."
    models = [r.body["model"] for r in llm.chat_requests() if r.body["model"] != "util-model"]
    # Agent 0, the researcher (following the chat), Agent 0, the profile with its own
    # model (keeping it), Agent 0.
    assert models == ["strong-model"] * 3 + ["own-model", "strong-model"]
    sub = context.agent0.subordinate
    assert sub is not None and sub.config.chat_model.model == "openai/own-model"


def test_a_choice_made_while_the_chat_runs_applies_from_its_next_run(chats, llm):
    context = chats.new_chat()
    llm.script(Reply(answer("slow " * 40), chunk_size=4, delay=0.05))
    run = context.communicate(UserMessage("Go."))
    wait_for(lambda: any(i.type == "response" for i in context.log.items), what="streaming")
    chats.choose_model(context, "Fast")
    now = model_choice.choice_view(context)  # chosen; Agent 0 goes on with its model
    assert now == {"preset": "Fast", "model": "", "chat_model": "openai/chat-model"}
    run.result(30)
    wait_for(lambda: context.agent0.config.chat_model.model == "openai/fast-model",
             what="the choice taken when the run ended")  # fmt: skip
    llm.add_rule(model_is("fast-model"), Reply(answer("fast now")))
    assert ask(context, "Next?") == "fast now"


def test_the_api_takes_a_preset_by_name_and_sets_a_chats_choice(http, server, llm):
    llm.add_rule(model_is("strong-model"), Reply(answer("strong")), times=None)
    llm.add_rule(model_is("fast-model"), Reply(answer("fast")), times=None)
    sent = http.post("/api/v1/message", headers=KEY, json={"message": "Hi", "preset": "Strong"})
    assert sent.status_code == 200 and sent.json["response"] == "strong"
    chat_id = sent.json["context_id"]
    strong = llm.chat_requests("strong-model")
    assert strong and strong[0].headers["authorization"] == "Bearer strong-key"
    shown = http.get(f"/api/v1/chats/{chat_id}", headers=KEY).json["model"]
    assert shown == {"preset": "Strong", "model": "", "chat_model": "openai/strong-model"}
    changed = http.patch(f"/api/v1/chats/{chat_id}", headers=KEY, json={"preset": "Fast"})
    assert changed.status_code == 200 and changed.json["model"]["preset"] == "Fast"
    again = http.post("/api/v1/message", headers=KEY,
                      json={"message": "Again", "context_id": chat_id})  # fmt: skip
    assert again.json["response"] == "fast"
    listed = http.get("/api/v1/presets", headers=KEY).json
    assert [p["name"] for p in listed["presets"]] == ["Fast", "Strong"]
    assert "strong-key" not in json.dumps(listed)
    cleared = http.patch(f"/api/v1/chats/{chat_id}", headers=KEY, json={"preset": None})
    assert cleared.json["model"] == {"preset": "", "model": "", "chat_model": "openai/chat-model"}


def test_an_unknown_preset_is_a_plain_400_and_makes_no_chat(http, server):
    manager = server.app.extensions["cadre.chats"]
    sent = http.post("/api/v1/message", headers=KEY, json={"message": "Hi", "preset": "Turbo"})
    assert sent.status_code == 400
    assert sent.json["error"] == ("no model preset 'Turbo': choose one of: Fast, Strong; or "
                                  "leave the preset out for the settings' model")  # fmt: skip
    assert len(manager.registry) == 0
    made = http.post("/api/v1/message", headers=KEY, json={"message": "x", "wait": False})
    chat_id = made.json["context_id"]
    bad = http.patch(f"/api/v1/chats/{chat_id}", headers=KEY, json={"preset": "Turbo"})
    assert bad.status_code == 400 and "Fast, Strong" in bad.json["error"]
    missing = http.patch(f"/api/v1/chats/{chat_id}", headers=KEY, json={})
    assert missing.status_code == 400 and missing.json["error"].startswith(
        "preset or model: Field required"
    )
    assert http.patch("/api/v1/chats/nope", headers=KEY, json={"preset": "Fast"}).status_code == 404


def test_the_openai_endpoint_takes_a_preset_as_its_model(http, llm):
    llm.add_rule(model_is("fast-model"), Reply(answer("fast answer")))
    body = {"model": "Fast", "messages": [{"role": "user", "content": "Hi"}]}
    done = http.post("/v1/chat/completions", headers=KEY, json=body)
    assert done.status_code == 200
    assert done.json["choices"][0]["message"]["content"] == "fast answer"
    assert done.json["model"] == "Fast" and len(llm.chat_requests("fast-model")) == 1
    names = [m["id"] for m in http.get("/v1/models", headers=KEY).json["data"]]
    assert names[0] == "cadre" and {"Fast", "Strong"} <= set(names)
    unknown = http.post("/v1/chat/completions", headers=KEY, json={**body, "model": "Turbo"})
    assert unknown.status_code == 404
    message = unknown.json["error"]["message"]
    assert "no model 'Turbo'" in message and "a model preset (Fast, Strong)" in message
