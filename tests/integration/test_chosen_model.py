"""A chat run on any configured chat model chosen by name (the settings' chat model, a
fallback, a preset's chat model): seen on the fake model server's side with the key the
settings give it, kept after a restart with no key in the chat's file or its export,
followed by subordinates, dropped for Default with a log line once the settings no longer
name it, taken through the API, refused in plain words when unknown."""

from __future__ import annotations

import json
import logging

import pytest

from core.agent_types import UserMessage
from helpers.folders import chat_dir
from helpers.runtime import AgentRuntime
from initialize import ChatFactory
from store import model_choice
from store.chats import ChatManager
from tests.support.agents import answer, make_profile, reply
from tests.support.fake_llm import Reply, model_is

KEY = {"X-API-Key": "api-secret"}
BACKUP = "openai/backup-model"


@pytest.fixture(autouse=True)
def _models(llm, monkeypatch):
    backup = {"model": BACKUP, "api_base": llm.base_url, "api_key": "backup-key"}
    strong = {"name": "Strong", "chat_model": "openai/strong-model",
              "chat_api_base": llm.base_url, "chat_api_key": "strong-key"}  # fmt: skip
    monkeypatch.setenv("CADRE_CHAT_FALLBACKS", json.dumps([backup]))
    monkeypatch.setenv("CADRE_MODEL_PRESETS", json.dumps([strong]))
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    llm.add_rule(model_is("util-model"), Reply("A name"), times=None)


@pytest.fixture
def chats(llm, runtime) -> ChatManager:
    return ChatManager(runtime, ChatFactory(runtime))


def ask(context, text: str) -> str:
    return context.communicate(UserMessage(text)).result(30)


def saved_text(chat_id: str) -> str:
    folder = chat_dir(chat_id)
    return "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


def test_a_chat_on_a_fallback_chosen_by_name_calls_it_with_its_key_and_keeps_only_its_name(
    chats, llm, monkeypatch, caplog
):
    llm.add_rule(model_is("backup-model"), Reply(answer("backup here")), times=None)
    llm.add_rule(model_is("chat-model"), Reply(answer("default here")), times=None)
    context = chats.new_chat()
    chats.choose_model(context, "", model_choice.checked_model(BACKUP, context.owner))
    assert model_choice.choice_view(context) == {"preset": "", "model": BACKUP,
                                                 "chat_model": BACKUP}  # fmt: skip
    assert ask(context, "Who answers?") == "backup here"
    sent = llm.chat_requests("backup-model")
    assert len(sent) == 1 and sent[0].headers["authorization"] == "Bearer backup-key"
    # The chat's file names the model and holds no key; nor does its export.
    saved = json.loads((chat_dir(context.id) / "chat.json").read_text())
    assert saved["agents"][0]["overrides"]["chosen_model"] == BACKUP
    assert "backup-key" not in saved_text(context.id) and "test-key" not in saved_text(context.id)
    exported = json.dumps(chats.export(context.id))
    assert f'"chosen_model": "{BACKUP}"' in exported and "backup-key" not in exported
    # A second process reads the chat from disk: the choice is there, and used.
    runtime = AgentRuntime().start()
    try:
        again = ChatManager(runtime, ChatFactory(runtime))
        again.load_saved()
        restored = again.get(context.id)
        assert model_choice.model_of(restored) == BACKUP
        assert ask(restored, "Still you?") == "backup here"
        assert len(llm.chat_requests("backup-model")) == 2
    finally:
        runtime.stop()
    # The settings name it no more: the next process runs the chat on Default, and says so.
    monkeypatch.setenv("CADRE_CHAT_FALLBACKS", "[]")
    runtime = AgentRuntime().start()
    try:
        with caplog.at_level(logging.WARNING, logger="core.agent_config"):
            later = ChatManager(runtime, ChatFactory(runtime))
            later.load_saved()
            gone = later.get(context.id)
        assert gone.agent0.config.chat_model.model == "openai/chat-model"
        assert f"chosen model {BACKUP!r}" in caplog.text and "no longer configured" in caplog.text
        assert ask(gone, "And now?") == "default here"
    finally:
        runtime.stop()


def test_a_subordinate_follows_the_chosen_model_unless_its_profile_sets_its_own(
    chats, llm, usr_dir
):
    own = make_profile(usr_dir, "own_model")
    (own / "settings.json").write_text(json.dumps({"chat_model": "openai/own-model"}))
    context = chats.new_chat()
    # A preset's chat model, chosen by name: the preset's address and key.
    chats.choose_model(context, "", model_choice.checked_model("openai/strong-model", None))
    llm.script(
        Reply(reply("call_subordinate", message="Look into X.", profile="researcher")),
        Reply(answer("X is fine.")),
        Reply(reply("call_subordinate", message="Now Y.", profile="own_model", reset=True)),
        Reply(answer("Y is fine.")),
        Reply(answer("Both are fine.")),
    )
    assert ask(context, "Delegate.") == "Both are fine."
    calls = [r for r in llm.chat_requests() if r.body["model"] != "util-model"]
    assert [r.body["model"] for r in calls] == ["strong-model"] * 3 + ["own-model", "strong-model"]
    assert calls[1].headers["authorization"] == "Bearer strong-key"


def test_the_api_takes_a_model_by_name_and_refuses_an_unknown_one_in_plain_words(http, llm):
    llm.add_rule(model_is("backup-model"), Reply(answer("backup")), times=None)
    llm.add_rule(model_is("strong-model"), Reply(answer("strong")), times=None)
    listed = http.get("/api/v1/presets", headers=KEY).json
    assert listed["models"] == [
        {"name": "openai/chat-model", "source": "settings"},
        {"name": BACKUP, "source": "fallback"},
        {"name": "openai/strong-model", "source": "Strong"},
    ]
    assert "backup-key" not in json.dumps(listed)
    sent = http.post("/api/v1/message", headers=KEY, json={"message": "Hi", "model": BACKUP})
    assert sent.status_code == 200 and sent.json["response"] == "backup"
    chat_id = sent.json["context_id"]
    shown = http.get(f"/api/v1/chats/{chat_id}", headers=KEY).json["model"]
    assert shown == {"preset": "", "model": BACKUP, "chat_model": BACKUP}
    changed = http.patch(f"/api/v1/chats/{chat_id}", headers=KEY,
                         json={"model": "openai/strong-model"})  # fmt: skip
    assert changed.status_code == 200 and changed.json["model"]["model"] == "openai/strong-model"
    again = http.post("/api/v1/message", headers=KEY, json={"message": "Again",
                                                            "context_id": chat_id})  # fmt: skip
    assert again.json["response"] == "strong"
    unknown = http.patch(f"/api/v1/chats/{chat_id}", headers=KEY, json={"model": "openai/turbo"})
    assert unknown.status_code == 400
    assert unknown.json["error"] == (
        "no configured model 'openai/turbo': choose one of: openai/chat-model, "
        f"{BACKUP}, openai/strong-model (Settings names them: the chat model, its fallbacks "
        "and the presets' models); or leave the model out for the settings' model"
    )
    both = http.patch(f"/api/v1/chats/{chat_id}", headers=KEY,
                      json={"preset": "Strong", "model": BACKUP})  # fmt: skip
    assert both.status_code == 400 and both.json["error"] == "send a preset or a model, not both"
    new = http.post("/api/v1/message", headers=KEY, json={"message": "Hi", "model": "x/y"})
    assert new.status_code == 400 and "no configured model 'x/y'" in new.json["error"]
    # A preset chosen after a model replaces it, and Default clears both.
    preset = http.patch(f"/api/v1/chats/{chat_id}", headers=KEY, json={"preset": "Strong"})
    assert preset.json["model"] == {"preset": "Strong", "model": "",
                                    "chat_model": "openai/strong-model"}  # fmt: skip
    cleared = http.patch(f"/api/v1/chats/{chat_id}", headers=KEY, json={"model": ""})
    assert cleared.json["model"] == {"preset": "", "model": "", "chat_model": "openai/chat-model"}
