"""Agent Zero's chat files move in: through Import, and found in usr/chats/ at start.

The chat files are written by tests/support/agent_zero_usr.py in Agent Zero's
format. An imported chat goes on: the model's next request holds the old turns
(checked on the fake model server's side).
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from core.agent_types import UserMessage
from core.chat_migrations import VERSION
from initialize import ChatFactory
from store import persist_chat
from store.chats import ChatManager
from tests.support import agent_zero_usr as a0
from tests.support.agents import answer
from tests.support.fake_llm import Reply


def sent_text(llm) -> str:
    """Everything the model was sent in its last chat request."""
    return llm.chat_requests("chat-model")[-1].text


def test_import_takes_an_agent_zero_chat_and_it_goes_on(http, server, llm):
    response = http.post("/api/chats/import", json=a0.chat())

    assert response.status_code == 200, response.json
    summary = response.json["chat"]
    assert summary["name"] == f"{a0.CHAT_NAME} (imported)"
    chats: ChatManager = server.app.extensions["cadre.chats"]
    context = chats.get(summary["id"])
    assert [a.number for a in context.agents()] == [0, 1]
    assert context.created_at == datetime.fromisoformat("2025-06-01T10:15:00.123456").timestamp()
    assert context.last_message == datetime.fromisoformat("2025-06-01T10:20:30+00:00").timestamp()
    # Agent Zero's log kinds, in Cadre's words; a temporary progress item is not kept.
    kinds = [(item.type, item.agentno) for item in context.log.items]
    assert [kind for kind, _ in kinds] == [
        "user", "agent", "tool", "util", "tool", "response", "mcp_tool",
    ]  # fmt: skip
    assert context.log.items[4].kvps["agent_zero_type"] == "browser"
    assert context.log.items[5].content == a0.OLD_ANSWER

    llm.script(Reply(answer("Wednesday: the Tile Museum.")))
    done = context.communicate(UserMessage("And on Wednesday?")).result(30)

    assert done == "Wednesday: the Tile Museum."
    seen = sent_text(llm)
    old_turns = (a0.OLD_SUMMARY, a0.OLD_QUESTION, a0.OLD_TOOL_RESULT, a0.OLD_ANSWER,
                 "Only free ones, please.", "You have misformatted your message.",
                 "<screenshot of the map>", "/a0/usr/uploads/map.png")  # fmt: skip
    for old in (*old_turns, "And on Wednesday?"):
        assert old in seen, old
    assert seen.index(a0.OLD_SUMMARY) < seen.index(a0.OLD_QUESTION) < seen.index("Wednesday?")
    assert "user_message" not in seen and "_cls" not in seen  # markers rendered, not dumped
    # The subordinate kept its own history.
    subordinate = context.agents()[1]
    assert a0.SUBORDINATE_TASK in subordinate.history.output()[0].content


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ({"agents": [], "log": {"logs": []}}, "no agents"),
        ({**a0.chat(), "agents": [{"number": 0, "history": "{not json"}]}, "history"),
        ({**a0.chat(), "log": {"logs": "nope"}}, "log"),
        ({"id": "x", "name": "y"}, "not a Cadre chat export"),
    ],
)
def test_a_damaged_agent_zero_chat_is_refused_with_a_reason(http, server, document, words):
    response = http.post("/api/chats/import", json=document)

    assert response.status_code == 400 and words in response.json["error"]
    assert len(server.app.extensions["cadre.chats"]) == 0


def test_an_agent_zero_chat_in_usr_chats_is_converted_at_start(llm, runtime, usr_dir):
    folder = usr_dir / "chats" / a0.CHAT_ID
    folder.mkdir(parents=True)
    original = json.dumps(a0.chat())
    (folder / "chat.json").write_text(original, encoding="utf-8")

    chats = ChatManager(runtime, ChatFactory(runtime))
    chats.load_saved()

    assert chats.damaged == []
    context = chats.get(a0.CHAT_ID)
    assert context.name == a0.CHAT_NAME and len(context.agents()) == 2
    # Agent 0 keeps the chat's profile; a subordinate gets a subordinate's one, never agent0.
    assert [a.config.profile for a in context.agents()] == ["agent0", "default"]
    assert (folder / "chat.agent-zero.json").read_text(encoding="utf-8") == original
    assert persist_chat.read_chat(a0.CHAT_ID).version == VERSION
    llm.script(Reply(answer("Noted.")))
    context.communicate(UserMessage("Thanks!")).result(30)
    assert a0.OLD_QUESTION in sent_text(llm)


def test_a_damaged_agent_zero_chat_at_start_is_set_aside_with_its_reason(runtime, usr_dir):
    folder = usr_dir / "chats" / "Bad00001"
    folder.mkdir(parents=True)
    bad = {**a0.chat("Bad00001"), "agents": [{"number": 0, "history": "[1, 2"}]}
    (folder / "chat.json").write_text(json.dumps(bad), encoding="utf-8")

    chats = ChatManager(runtime, ChatFactory(runtime))
    chats.load_saved()

    assert [d.id for d in chats.damaged] == ["Bad00001"]
    assert "Agent Zero chat" in chats.damaged[0].reason and "history" in chats.damaged[0].reason
