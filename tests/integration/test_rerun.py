"""Edit and Resend of the user's last message: history, log and file cut back, run again."""

from __future__ import annotations

import json

import pytest

from core.agent_types import UserMessage
from core.rerun import rerun_last
from helpers.runtime import AgentRuntime
from initialize import ChatFactory
from store import persist_chat
from store.chat_search import search_chats
from store.chats import ChatManager
from tests.integration.test_persistence import crashed_while_delegating
from tests.support.agents import answer, history_text, reply, wait_for
from tests.support.fake_llm import Hang, Reply, model_is


@pytest.fixture
def chats(server) -> ChatManager:
    manager: ChatManager = server.app.extensions["cadre.chats"]
    return manager


@pytest.fixture(autouse=True)
def _utility(llm):
    """Naming the chat (and any other utility call) gets a short answer."""
    llm.add_rule(model_is("util-model"), Reply("A name"))


def run(context, text: str, attachments: list[str] | None = None) -> str:
    return context.communicate(UserMessage(text, attachments=attachments or [])).result(30)


def chat_texts(llm) -> list[str]:
    """The text of every chat-model request's messages, in order."""
    return [r.text for r in llm.chat_requests("chat-model")]


def user_items(context) -> list[tuple[str, str]]:
    return [(i.heading, i.content) for i in context.log.items if i.type == "user"]


def wait_idle(context, answer_text: str) -> None:
    wait_for(
        lambda: (
            not context.running
            and any(i.type == "response" and answer_text in i.content for i in context.log.items)
        ),
        timeout=30,
        what=f"the answer {answer_text!r}",
    )


def test_edit_cuts_history_log_and_file_back_and_runs_the_new_text(
    http, chats, llm, usr_dir, runtime
):
    context = chats.new_chat()
    llm.script(Reply(answer("First answer.")))
    run(context, "First question")
    # The second turn delegates: its subordinate goes with it.
    llm.script(
        Reply(reply("call_subordinate", message="Look up the old thing.")),
        Reply(answer("Sub found the old thing.")),
        Reply(answer("Old answer.")),
    )
    run(context, "Second question, old wording")
    assert len(context.agents()) == 2
    requests_before = len(chat_texts(llm))

    llm.script(Reply(answer("New answer.")))
    answer_ = http.post(f"/api/chats/{context.id}/rerun", json={"message": "Second, new wording"})
    assert answer_.status_code == 200, answer_.json
    wait_idle(context, "New answer.")

    # The model got the new text and none of the dropped turn.
    new_request = chat_texts(llm)[requests_before]
    assert "Second, new wording" in new_request
    assert "old wording" not in new_request and "Old answer." not in new_request
    assert "First question" in new_request and "First answer." in new_request
    # History, chain and log hold only the new run.
    assert "old wording" not in history_text(context.agent0)
    assert "Second, new wording" in history_text(context.agent0)
    assert len(context.agents()) == 1
    assert user_items(context) == [
        ("User message", "First question"),
        ("User message", "Second, new wording"),
    ]
    logged = json.dumps([i.model_dump() for i in context.log.items])
    assert "old wording" not in logged and "Old answer." not in logged
    assert "Sub found" not in logged and all(i.agentno == 0 for i in context.log.items)
    assert [i.no for i in context.log.items] == list(range(len(context.log.items)))

    # On disk as well, and so after a restart.
    chats.save_now(context)
    saved = persist_chat.read_chat(context.id)
    assert len(saved.agents) == 1
    assert "old wording" not in json.dumps(saved.model_dump())
    again_runtime = AgentRuntime().start()
    try:
        again = ChatManager(again_runtime, ChatFactory(again_runtime))
        again.load_saved()
        restored = again.get(context.id)
        assert user_items(restored) == user_items(context)
        assert history_text(restored.agent0) == history_text(context.agent0)
        assert len(restored.agents()) == 1 and not restored.interrupted
    finally:
        again_runtime.stop()


def test_resend_runs_the_same_text_with_its_attachments(http, chats, llm, usr_dir):
    context = chats.new_chat()
    folder = usr_dir / "chats" / context.id / "attachments"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_text("some notes")
    llm.script(Reply(answer("Read them.")))
    run(context, "Read my notes", [str(folder / "notes.txt")])
    requests_before = len(chat_texts(llm))

    llm.script(Reply(answer("Read them again.")))
    assert http.post(f"/api/chats/{context.id}/rerun", json={}).status_code == 200
    wait_idle(context, "Read them again.")
    resent = chat_texts(llm)[requests_before]
    assert "Read my notes" in resent and "notes.txt" in resent
    assert resent.count("Read my notes") == 1  # the first run's copy is gone
    items = [i for i in context.log.items if i.type == "user"]
    assert len(items) == 1 and items[0].kvps["attachments"] == [str(folder / "notes.txt")]
    assert [i.content for i in context.log.items if i.type == "response"] == ["Read them again."]


def test_refused_while_running_and_nothing_is_cut(http, chats, llm):
    context = chats.new_chat()
    llm.script(Reply(answer("Done.")))
    run(context, "Hello")
    llm.script(Hang(seconds=30))
    context.communicate(UserMessage("Think slowly"))
    # Count the log once the model holds the request: until then the run is still
    # adding its progress item, and the count raced it (CI saw 4 become 5).
    wait_for(lambda: any("Think slowly" in t for t in chat_texts(llm)), what="the request")
    items = len(context.log.items)
    refused = http.post(f"/api/chats/{context.id}/rerun", json={"message": "Other"})
    assert refused.status_code == 409
    assert "stop it first" in refused.json["error"]
    assert len(context.log.items) == items and "Think slowly" in history_text(context.agent0)
    assert ("User message", "Think slowly") in user_items(context)
    context.stop()
    wait_for(lambda: not context.running, timeout=20, what="the stop")


def test_bad_requests_say_what_is_wrong(http, chats):
    context = chats.new_chat()
    nothing = http.post(f"/api/chats/{context.id}/rerun", json={})
    assert nothing.status_code == 400 and "no message of yours" in nothing.json["error"]
    empty = http.post(f"/api/chats/{context.id}/rerun", json={"message": "   "})
    assert empty.status_code == 400
    unknown = http.post("/api/chats/nosuchchat/rerun", json={})
    assert unknown.status_code == 404
    no_csrf = http.post(
        f"/api/chats/{context.id}/rerun", json={}, headers={"X-CSRF-Token": "wrong"}
    )
    assert no_csrf.status_code == 403


def test_an_empty_edit_keeps_the_chat_as_it_was(http, chats, llm):
    context = chats.new_chat()
    chats.rename(context.id, "Kept")  # no naming call after the answer, its item late
    llm.script(Reply(answer("Fine.")))
    run(context, "Keep me")
    before = json.dumps(context.log.to_list())
    answer_ = http.post(f"/api/chats/{context.id}/rerun", json={"message": " \n "})
    assert answer_.status_code == 400 and "empty" in answer_.json["error"]
    assert json.dumps(context.log.to_list()) == before


def test_search_finds_chats_by_name_and_by_what_was_said(http, chats, llm, runtime):
    named = chats.new_chat()
    chats.rename(named.id, "Holiday plans")
    talked = chats.new_chat()
    chats.rename(talked.id, "Trip")  # no naming call after the answer: its saves came late
    llm.script(Reply(answer("Paris is lovely in spring.")))
    run(talked, "Where should I go?")
    chats.new_chat()
    # A chat found by what was said comes with the words around it (the list showed
    # names alone, none of which held the text); one found by its name needs none.
    assert http.get("/api/chats/search?q=holiday").json == {
        "ids": [named.id], "snippets": {named.id: ""}}  # fmt: skip
    assert http.get("/api/chats/search?q=PARIS").json == {
        "ids": [talked.id], "snippets": {talked.id: "Paris is lovely in spring."}}  # fmt: skip
    assert http.get("/api/chats/search?q=nowhere-at-all").json == {"ids": [], "snippets": {}}
    # A chat not opened since the start is searched in its file.
    chats.save_now(talked)
    # Two managers of one folder exist only in this test: the first saves nothing more. A
    # late save of the first (after the chat's naming) once lost its summary to the second's
    # start, which sweeps away half-written files, and the chat was then read at start.
    chats.freeze()
    fresh = ChatManager(runtime, ChatFactory(runtime))
    fresh.load_saved()
    assert search_chats(fresh, "should I go") == [talked.id]
    assert fresh.registry.get(talked.id) is None  # searched without loading it
    assert http.get("/api/chats/search?q=" + "x" * 201).status_code == 400


def test_a_chat_interrupted_mid_delegation_is_edited_after_a_restart(chats, llm, usr_dir):
    context = crashed_while_delegating(chats, llm, usr_dir)
    runtime = AgentRuntime().start()
    try:
        again = ChatManager(runtime, ChatFactory(runtime))
        again.load_saved()
        restored = again.get(context.id)
        assert restored.interrupted and len(restored.agents()) == 2
        llm.script(Reply(answer("Y is new.")))
        rerun_last(restored, UserMessage, "What about Y?").result(30)
        wait_for(lambda: not restored.running, what="the run's end")
        assert not restored.interrupted and len(restored.agents()) == 1
        assert user_items(restored) == [("User message", "What about Y?")]
        assert "What about X?" not in history_text(restored.agent0)
        # Saved so: a second restart finds the edited chat, not the interrupted one.
        again.save_now(restored)
        saved = persist_chat.read_chat(context.id)
        assert not saved.running and len(saved.agents) == 1
        assert "What about X?" not in json.dumps(saved.model_dump())
    finally:
        runtime.stop()
