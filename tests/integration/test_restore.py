"""A restored chat is the chat that was saved: links, budgets, interventions, field by field."""

from __future__ import annotations

import json

import pytest

from agent import UserMessage
from core.budget import Limits
from initialize import ChatFactory
from store import persist_chat
from store.chats import ChatManager
from tests.integration.test_persistence import crash, reload
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply


@pytest.fixture
def chats(llm, runtime) -> ChatManager:
    return ChatManager(runtime, ChatFactory(runtime))


def prompt_text(request) -> str:
    return json.dumps(request.messages, ensure_ascii=False)


def test_a_resumed_subordinate_keeps_its_delegated_budget(chats, llm, usr_dir):
    llm.script(
        Reply(
            reply(
                "call_subordinate",
                message="Research X.",
                profile="researcher",
                budget={"tokens": 5000},
            )
        ),  # fmt: skip
        Reply(reply("teleport"), usage=(100, 20)),  # A1 spends 120 tokens of its budget
        Reply(answer("X is " + "very " * 40 + "old."), chunk_size=4, delay=0.05),
    )
    context = chats.new_chat()
    run = context.communicate(UserMessage("What about X?"))
    wait_for(lambda: any(i.type == "response" and i.agentno == 1 for i in context.log.items),
             what="the subordinate streaming")  # fmt: skip
    crash(context, run, usr_dir)

    again, runtime = reload(usr_dir)
    try:
        restored = again.get(context.id)
        a1 = restored.agents()[1]
        assert [(s.name, s.limits) for s in a1.delegation_budgets] == [
            ("budget of A1", Limits(tokens=5000))
        ]
        assert a1.delegation_budgets[0].spent.total_tokens == 120
        llm.script(Reply(answer("X is old.")), Reply(answer("Final: X is old.")))
        assert restored.continue_interrupted().result(30) == "Final: X is old."
        # The resumed subordinate still works under its budget, and is told what is left.
        assert "budget of A1: 4,880 tokens left" in prompt_text(llm.chat_requests()[-2])
    finally:
        runtime.stop()


def test_an_unread_intervention_keeps_its_attachments_and_system_message(chats, llm, usr_dir):
    llm.script(Reply(answer("slow " * 40), chunk_size=4, delay=0.05))
    context = chats.new_chat()
    run = context.communicate(UserMessage("Go."))
    wait_for(lambda: any(i.type == "response" for i in context.log.items), what="streaming")
    context.pause()
    sent = UserMessage("look at this too", attachments=["/files/plan.png"],
                       system_message=["The user writes from a phone."])  # fmt: skip
    context.communicate(sent)
    wait_for(lambda: any(a.intervention for a in persist_chat.read_chat(context.id).agents),
             what="the intervention on disk")  # fmt: skip
    crash(context, run, usr_dir)

    again, runtime = reload(usr_dir)
    try:
        restored = again.get(context.id)
        assert restored.agent0.intervention == sent
        restored.resume()
        llm.script(Reply(answer("Seen it.")))
        assert restored.continue_interrupted().result(30) == "Seen it."
        read = prompt_text(llm.chat_requests()[-1])
        assert "/files/plan.png" in read and "The user writes from a phone." in read
    finally:
        runtime.stop()
