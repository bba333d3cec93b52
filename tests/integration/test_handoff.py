"""Handoff: Agent 0 passes the conversation to another profile and gets it back."""

from __future__ import annotations

import pytest

from core.agent_types import UserMessage
from core.chat import Chat
from helpers.errors import RepairableException
from initialize import ChatFactory, agent_config
from server.routes import views
from store.chats import ChatManager
from tests.integration.test_persistence import reload
from tests.support.agents import answer, make_profile, reply
from tests.support.fake_llm import Reply, model_is
from tools.handoff import Handoff

AGENT0_ROLE = "You are Agent 0 of Cadre"
RESEARCHER_ROLE = "You are a careful researcher working for the user"


def handoff(profile: str, message: str = "") -> Reply:
    args = {"profile": profile, **({"message": message} if message else {})}
    return Reply(reply("handoff", headline="Handing over", **args))


def system_of(request) -> str:
    return request.messages[0]["content"]


def said(request) -> str:
    return "\n".join(m["content"] for m in request.messages[1:])


@pytest.fixture
def chats(llm, runtime) -> ChatManager:
    return ChatManager(runtime, ChatFactory(runtime))


def test_handoff_there_and_back(make_context, llm):
    context = make_context()
    a0 = context.agent0
    llm.script(
        handoff("researcher", "The user studies bees."),
        Reply(answer("Bees dance to show where food is.")),  # the researcher, as A0
    )
    first = context.communicate(UserMessage("Why do bees dance?")).result(30)
    assert first == "Bees dance to show where food is."
    before, after = llm.chat_requests("chat-model")
    assert AGENT0_ROLE in system_of(before) and "- `handoff`: " in system_of(before)
    # The same history goes on under the researcher's system prompt.
    assert RESEARCHER_ROLE in system_of(after) and AGENT0_ROLE not in system_of(after)
    assert "Why do bees dance?" in said(after)
    assert "you are now Researcher (profile 'researcher')" in said(after)
    assert "Handed over with: The user studies bees." in said(after)
    # It may hand the conversation back: its prompt names the way.
    assert "or `agent0` to hand the conversation back" in system_of(after)
    assert (a0.config.profile, context.home_profile) == ("researcher", "agent0")
    assert context.runtime.call(views.chat_state, context)["talker"] == {
        "profile": "researcher", "title": "Researcher", "home": "agent0", "home_title": "Agent 0"
    }  # fmt: skip
    assert context.agents() == [a0]  # no new agent: Agent 0 talks as another profile
    info = [i for i in context.log.items if i.type == "info"]
    assert [(i.heading, i.kvps) for i in info] == [
        ("Researcher talks with you now",
         {"handoff": "researcher", "from": "agent0", "title": "Researcher", "back": False})
    ]  # fmt: skip
    assert "The user studies bees." in info[0].content
    # The model read the hand-over text (above); the log shows the user only the info line.
    (call,) = [i for i in context.log.items if i.type == "tool" and "Handing" in i.heading]
    assert (call.kvps["profile"], call.content) == ("researcher", "")

    # The next message goes to the researcher; it hands back, and Agent 0 answers.
    llm.script(handoff("agent0"), Reply(answer("Agent 0 here again.")))
    again = context.communicate(UserMessage("Thanks. Now plan my week.")).result(30)
    assert again == "Agent 0 here again."
    _, _, researcher, agent0 = llm.chat_requests("chat-model")
    assert RESEARCHER_ROLE in system_of(researcher)
    assert AGENT0_ROLE in system_of(agent0) and "Why do bees dance?" in said(agent0)
    assert (a0.config.profile, context.home_profile) == ("agent0", None)
    talker = context.runtime.call(views.chat_state, context)["talker"]
    assert (talker["title"], talker["home"]) == ("Agent 0", None)
    info = [i.heading for i in context.log.items if i.type == "info"]
    assert info == ["Researcher talks with you now", "Agent 0 talks with you again"]
    assert "hand the conversation back" not in system_of(agent0)


def test_handoff_is_validated_like_call_subordinate(make_context, llm, usr_dir):
    make_profile(usr_dir, "agent0", yaml="title: Agent 0\nsubordinate: false\n"
                 "subordinates: [researcher]\n")  # fmt: skip
    llm.script(
        handoff("developer"),  # exists, but agent0 may not call it
        handoff("ghost"),
        handoff("agent0"),  # already talking
        Reply(answer("I stay.")),
    )
    context = make_context(max_unusable_replies=5)
    assert context.communicate(UserMessage("Hi.")).result(30) == "I stay."
    warnings = [r.messages[-1]["content"] for r in llm.chat_requests("chat-model")[1:]]
    assert warnings[0].endswith(
        "You cannot hand the conversation to profile 'developer'. "
        "Use one of these profiles: researcher (Researcher)."
    )
    assert "to profile 'ghost'" in warnings[1]
    assert warnings[2].endswith(
        "You already are profile 'agent0' and talk with the user: answer them yourself."
    )
    assert context.agent0.config.profile == "agent0" and context.home_profile is None


async def test_only_the_agent_talking_with_the_user_may_hand_off(llm):
    context = Chat(agent_config())
    a0 = context.agent0
    sub = context.agent0.__class__(1, agent_config({"agent_profile": "default"}), context)
    a0.link_subordinate(sub)
    assert "handoff" in a0.available_tools() and "handoff" not in sub.available_tools()
    with pytest.raises(RepairableException) as caught:
        await Handoff(sub.ctx, "handoff", None, {"profile": "researcher"}, "", None).run()
    assert str(caught.value).startswith("Only the agent talking with the user can hand")
    assert sub.config.profile == "default" and a0.config.profile == "agent0"


def test_a_subordinate_that_calls_handoff_is_told_it_cannot(make_context, llm):
    llm.script(
        Reply(reply("call_subordinate", message="Look into bees.", profile="researcher")),
        handoff("developer"),  # A1 tries it
        Reply(answer("Bees dance.")),  # A1
        Reply(answer("They dance.")),  # A0
    )
    context = make_context()
    assert context.communicate(UserMessage("Bees?")).result(30) == "They dance."
    warning = llm.chat_requests("chat-model")[2].messages[-1]["content"]
    assert 'There is no tool named "handoff"' in warning
    assert context.agent0.config.profile == "agent0"


def test_a_handoff_survives_a_restart_and_a_settings_change(chats, llm, usr_dir):
    llm.add_rule(model_is("util-model"), Reply("Greeting"))  # the chat's name
    llm.script(handoff("researcher"), Reply(answer("Researcher here.")))
    context = chats.new_chat()
    assert context.communicate(UserMessage("Hello.")).result(30) == "Researcher here."
    chats.save_now(context)

    again, runtime = reload(usr_dir)
    try:
        restored = again.get(context.id)
        assert restored.agent0.config.profile == "researcher"
        assert restored.home_profile == "agent0"
        assert restored.config.profile == "researcher"
        again.apply_settings()  # new settings keep the profile talking now
        runtime.call(lambda: None)  # the refresh ran (queued before this call)
        assert restored.agent0.config.profile == "researcher"
        llm.script(Reply(answer("Still the researcher.")))
        reply_text = restored.communicate(UserMessage("Who is this?")).result(30)
        assert reply_text == "Still the researcher."
        assert RESEARCHER_ROLE in system_of(llm.chat_requests("chat-model")[-1])
        assert "Hello." in said(llm.chat_requests("chat-model")[-1])
        # A reset starts the conversation over with the chat's own profile.
        fresh = again.reset(context.id)
        assert (fresh.agent0.config.profile, fresh.home_profile) == ("agent0", None)
    finally:
        runtime.stop()


def test_an_exported_handoff_is_imported_handed_and_returns_for_good(http, server, llm):
    chats = server.app.extensions["cadre.chats"]
    llm.add_rule(model_is("util-model"), Reply("Greeting"))
    llm.script(handoff("researcher"), Reply(answer("Researcher here.")))
    chat = chats.new_chat()
    assert chat.communicate(UserMessage("Hello.")).result(30) == "Researcher here."
    document = http.get(f"/api/chats/{chat.id}/export").json
    assert document["chat"]["home_profile"] == "agent0"
    assert document["chat"]["agents"][0]["overrides"] == {"agent_profile": "agent0"}
    imported = chats.get(http.post("/api/chats/import", json=document).json["chat"]["id"])
    assert (imported.agent0.config.profile, imported.home_profile) == ("researcher", "agent0")
    llm.script(handoff("agent0"), Reply(answer("Agent 0 again.")))
    assert imported.communicate(UserMessage("Back, please.")).result(30) == "Agent 0 again."
    chats.apply_settings()
    chats.runtime.call(lambda: None)  # the refresh queued before this call ran
    # Its own profile stays Agent 0's: the import did not pin the one handed to.
    assert (imported.agent0.config.profile, imported.home_profile) == ("agent0", None)
