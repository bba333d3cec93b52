"""Fallback models in a chat: the step that moved says so on its row, the chat's state (the
page's header and status line) says a fallback is in use, the chat's usage (and the API's
view of it) is counted by the model that answered; a reply the model can repair does not
move. And the fallbacks' keys, secrets like any other, stay masked in the settings."""

from __future__ import annotations

import json
import logging

import pytest

from core.agent_types import UserMessage
from helpers.secrets import secret_values
from helpers.settings import load_settings
from models import fallback
from server.routes import views
from store.chats import ChatManager
from tests.support.agents import answer
from tests.support.fake_llm import Fail, Reply, model_is

KEY = "fallback-test-key"
MAIN, BACKUP = "openai/chat-model", "openai/backup-model"
MOVED = f"{MAIN} refused: no credit or quota left; {BACKUP} answered"


@pytest.fixture(autouse=True)
def _fallbacks(monkeypatch, llm):
    monkeypatch.setenv("CADRE_API_KEY", KEY)
    backup = {"model": BACKUP, "api_base": llm.base_url, "api_key": "backup-secret-key"}
    monkeypatch.setenv("CADRE_CHAT_FALLBACKS", json.dumps([backup]))
    # The utility model's work around a run (naming the chat) answered apart.
    llm.add_rule(model_is("util-model"), Reply("A name"))
    fallback.COOLING.clear()
    yield
    fallback.COOLING.clear()


def chats_of(server) -> ChatManager:
    return server.app.extensions["cadre.chats"]


def test_a_chat_whose_model_is_out_of_credit_is_answered_by_its_fallback(server, llm, caplog):
    llm.add_rule(model_is("chat-model"), Fail(status=402, message="insufficient credit"))
    llm.add_rule(model_is("backup-model"), Reply(answer("From the backup."), usage=(30, 7)))
    client = server.app.test_client()
    headers = {"X-API-Key": KEY}

    with caplog.at_level(logging.WARNING, logger="models.fallback"):
        sent = client.post("/api/v1/message", json={"message": "hi"}, headers=headers)
    assert sent.status_code == 200 and sent.json["response"] == "From the backup."
    assert any(MOVED in record.getMessage() for record in caplog.records)

    chat_id = sent.json["context_id"]
    shown = client.get(f"/api/v1/chats/{chat_id}", headers=headers).json
    # The step's row says which model answered and why the call moved.
    [step] = [i for i in shown["log"] if i["type"] == "agent" and i["kvps"].get("fallback")]
    assert step["kvps"]["fallback"] == MOVED
    # The chat's usage, by the model that answered: none of it the main model's.
    by_model = shown["usage"]["models"]
    assert MAIN not in by_model
    assert by_model[BACKUP]["prompt_tokens"] == 30 and by_model[BACKUP]["calls"] == 1
    assert shown["agents"][0]["usage"]["models"][BACKUP]["completion_tokens"] == 7

    # The chat's state (the header and the status line) says a fallback is in use.
    chats = chats_of(server)
    context = chats.get(chat_id)
    state = chats.runtime.call(views.chat_state, context)
    assert state["fallback"]["model"] == MAIN and state["fallback"]["instead"] == BACKUP
    assert "no credit or quota left" in state["fallback"]["reason"]


def test_a_reply_the_model_can_repair_does_not_move(make_context, llm):
    llm.add_rule(model_is("chat-model"), Reply("Sure! Here is my answer, not in JSON."), times=1)
    llm.add_rule(model_is("chat-model"), Reply(answer("Now in form.")))
    context = make_context()
    assert context.communicate(UserMessage("hi")).result(30) == "Now in form."
    assert llm.chat_requests(model="backup-model") == []
    assert len(llm.chat_requests(model="chat-model")) == 2
    assert [i for i in context.log.items if i.kvps.get("fallback")] == []


def test_the_fallbacks_keys_are_masked_and_kept(http):
    sent = [{"model": "openai/spare", "api_key": "util-spare-secret"}, "openai/named-only"]
    saved = http.post("/api/settings", json={"util_fallbacks": sent})
    assert saved.status_code == 200, saved.json
    shown = http.get("/api/settings").json
    assert shown["util_fallbacks"] == [
        {"model": "openai/spare", "api_base": "", "api_key": "***"},
        {"model": "openai/named-only", "api_base": "", "api_key": ""},
    ]
    assert shown["chat_fallbacks"][0]["api_key"] == "***"  # the environment's, masked too
    # Sent back as shown: the stored key stays, and the environment's list is no change.
    back = {name: shown[name] for name in ("util_fallbacks", "chat_fallbacks")}
    again = http.post("/api/settings", json=back)
    assert again.status_code == 200, again.json
    settings = load_settings()
    assert settings.util_fallbacks[0].api_key == "util-spare-secret"
    # A key of a fallback is a secret the log's masking rule hides, as the others.
    assert {"util-spare-secret", "backup-secret-key"} <= set(secret_values(settings))
