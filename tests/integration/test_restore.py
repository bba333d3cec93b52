"""A restored chat is the chat that was saved: links, budgets, interventions, field by field."""

from __future__ import annotations

import concurrent.futures
import json
import threading

import pytest

from core.agent_types import UserMessage
from core.budget import Limits
from core.chat_record import AGENT_NOT_SAVED
from helpers.runtime import AgentRuntime
from initialize import ChatFactory, restore_chat
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
        assert "budget of A1: 4,880 tokens left" in prompt_text(llm.chat_requests("chat-model")[-2])
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
        read = prompt_text(llm.chat_requests("chat-model")[-1])
        assert "/files/plan.png" in read and "The user writes from a phone." in read
    finally:
        runtime.stop()


# -- the round trip: a chat in every interesting state at once ------------------------

#: The attributes of an agent that are saved and compared here; with `AGENT_NOT_SAVED`
#: they must name every attribute an agent has (a new one must be decided on).
SAVED = {
    "number", "superior", "subordinates", "task", "history", "data", "usage",
    "intervention", "nudged", "last_reply", "delegation_budgets", "file_reads",
    "agent_name", "handed", "retired", "held",
}  # fmt: skip


def scope_fields(scope) -> tuple:
    # Seconds run on: compared apart, within the time the test itself takes.
    return (scope.name, scope.limits, scope.spent, scope.grace)


def agent_fields(agent) -> dict:
    """Every saved field of `agent` in a comparable form (links as agent numbers)."""
    assert set(vars(agent)) - AGENT_NOT_SAVED == SAVED
    return {
        "number": agent.number,
        "agent_name": agent.agent_name,
        "handed": agent.handed,
        "profile": agent.config.profile,
        "overrides": agent.config.overrides,
        "superior": agent.superior.number if agent.superior is not None else None,
        "subordinates": [s.agent_name for s in agent.subordinates],
        "retired": [a.agent_name for a in agent.retired],
        "task": agent.task,
        "history": agent.history.to_dict(),
        "data": agent.data,
        "usage": agent.usage,
        "intervention": agent.intervention,
        "nudged": agent.nudged,
        "last_reply": agent.last_reply,
        "delegation_budgets": [scope_fields(s) for s in agent.delegation_budgets],
        "file_reads": agent.file_reads,
        "held": held_fields(agent.held),
    }


def held_fields(held) -> tuple | None:
    # The wait itself (a future of the process) is not saved: a restored call has none.
    return None if held is None else (held.id, held.agent, held.tool, held.args, held.names,
                                      held.call, held.method)  # fmt: skip


def chat_fields(context) -> dict:
    return {
        "id": context.id,
        "name": context.name,
        "created_at": context.created_at,
        "last_message": context.last_message,
        "project": context.project,
        "paused": context.paused,
        "usage": context.usage,
        "working_agent": context.working_agent.agent_name,
        "busy": [a.agent_name for a in context.busy],
        "log_guid": context.log.guid,
        "variables": context.variables,
        "home_profile": context.home_profile,
        "agents": [agent_fields(a) for a in context.agents()],
    }


def test_a_chat_in_every_state_comes_back_equal_field_by_field(chats, llm, usr_dir, monkeypatch):
    """Mid-delegation under a delegated budget, a command waiting for approval, paused,
    an unread intervention with attachments on two agents: saved, read back, equal."""
    monkeypatch.setenv("CADRE_CODE_EXEC_CONFIRM", "true")
    (usr_dir / "workdir").mkdir()
    (usr_dir / "workdir" / "notes.txt").write_text("one\ntwo\n")
    llm.script(
        Reply(
            reply(
                "call_subordinate",
                message="Tidy the notes.",
                profile="developer",
                budget={"tokens": 9000, "calls": 20},
            ),
            usage=(50, 5),
        ),  # fmt: skip
        Reply(reply("text_editor:read", path="notes.txt"), usage=(100, 20)),
        Reply(reply("code_execution_tool", runtime="terminal", code="sort notes.txt")),
    )
    context = chats.new_chat()
    context.set_variables({"customer": "ACME", "note": "naïve ✓\nsecond line"})
    run = context.communicate(UserMessage("Tidy my notes."))
    runtime = chats.runtime
    wait_for(lambda: runtime.call(context.approvals.pending), what="a command awaiting approval")
    context.pause()
    sent = UserMessage("keep the blank lines", attachments=["/files/rules.md"],
                       system_message=["Sent from the phone."])  # fmt: skip
    context.communicate(sent, broadcast_level=2)
    a0, a1 = context.agents()
    wait_for(lambda: runtime.call(lambda: a1.intervention is sent), what="the intervention")
    before = runtime.call(chat_fields, context)
    log_before = runtime.call(context.log.to_list)
    # Through the manager's ordered writes: a save the run queued earlier (the
    # intervention's) cannot land after this one and put an older state on disk.
    chats.save_now(context)
    # The states this test is about are all there, for real.
    assert a1.delegation_budgets and a1.task == "Tidy the notes." and a1.file_reads.seen
    assert before["paused"] and a0.intervention is sent and a1.last_reply
    assert before["variables"] == {"customer": "ACME", "note": "naïve ✓\nsecond line"}

    second = AgentRuntime().start()
    try:
        restored = restore_chat(persist_chat.load_chat(context.id), second)
        after = second.call(chat_fields, restored)
        for saved, back in zip(before.pop("agents"), after.pop("agents"), strict=True):
            assert back == saved
        assert after == before
        r0, r1 = restored.agents()
        assert r1.superior is r0 and r0.subordinate is r1
        assert r0.intervention is r1.intervention  # one message, as when it was sent
        seconds = a1.delegation_budgets[0].used()["seconds"]
        assert abs(r1.delegation_budgets[0].used()["seconds"] - seconds) < 5
        # The command waiting for its approval is held again, under its own item, and
        # nothing of A1's step was cut (it goes on with the call once answered).
        [held] = [i["id"] for i in log_before if i["kvps"].get("approval") == "pending"]
        assert restored.interrupted and second.call(restored.approvals.pending) == [held]
        assert r1.held is not None and r1.held.id == held
        log_after = second.call(restored.log.to_list)
        assert log_after[-1]["heading"] == "Interrupted" and len(log_after) == len(log_before) + 1
        cut = [new["type"] for new in log_after if new["kvps"].get("status") == "interrupted"]
        assert cut == []
        for old, new in zip(log_before, log_after, strict=False):
            if new["kvps"].get("status") == "interrupted":
                kvps = {k: v for k, v in new["kvps"].items() if k != "status"}
                new = {**new, "kvps": kvps, "version": old["version"]}
            assert new == old
    finally:
        second.stop()
        context.stop()
        with pytest.raises(concurrent.futures.CancelledError):
            run.result(10)


def test_a_chat_saved_mid_batch_comes_back_equal_field_by_field(chats, llm, usr_dir):
    """Siblings working at once, one of them finished: names, handovers and who was
    busy come back as they were."""
    from tests.integration.test_parallel_subordinates import TASKS, delegate_all, task_is

    gate = threading.Event()
    llm.add_rule(task_is("Task ONE"), Reply(answer("apple, pear")))
    for task in ("Task TWO", "Task THREE"):
        llm.add_rule(task_is(task), Reply(answer("held"), gate=gate))
    llm.script(delegate_all(*TASKS))
    context = chats.new_chat()
    context.communicate(UserMessage("Make three lists."))
    runtime = chats.runtime
    second = AgentRuntime().start()
    try:
        a1 = wait_for(lambda: runtime.call(lambda: context.find_agent("A1.1")), what="A1.1")
        wait_for(lambda: runtime.call(lambda: a1.handed is not None), what="A1.1's answer")
        before = runtime.call(chat_fields, context)
        chats.save_now(context)  # in order behind the run's own saves (see above)
        assert before["busy"] == ["A0", "A1.2", "A1.3"]
        assert before["agents"][1]["handed"].text == "apple, pear"

        restored = restore_chat(persist_chat.load_chat(context.id), second)
        after = second.call(chat_fields, restored)
        for saved, back in zip(before.pop("agents"), after.pop("agents"), strict=True):
            assert back == saved
        assert after == before
        assert [a.agent_name for a in restored.working_agents()] == ["A1.2", "A1.3"]
        assert all(s.superior is restored.agent0 for s in restored.agents()[1:])
    finally:
        gate.set()  # the held siblings answer only now: nothing moved while compared
        second.stop()
