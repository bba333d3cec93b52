"""Workflow profiles end to end: real litellm against the fake model server, real files.

Agent 0 calls a workflow profile through `call_subordinate`; its agent (A1) calls
no model and runs the declared steps as its own subordinates. Each step's
replies are routed by what its first user message holds, so the test reads
exactly what each step was given.
"""

from __future__ import annotations

import json
import threading

from core.agent_types import UserMessage
from tests.integration.test_parallel_subordinates import task_is, tool_result
from tests.integration.test_persistence import crash, reload
from tests.integration.test_restore import chats  # noqa: F401 - the fixture
from tests.support.agents import answer, make_profile, reply, wait_for
from tests.support.fake_llm import Reply

TASK = "TASK: a short note about owls."


def workflow(usr_dir, name: str, declared: str) -> None:
    make_profile(usr_dir, name, yaml=f"title: {name}\ndescription: d\nworkflow: {declared}\n")


def first_user(request) -> str:
    return next(m["content"] for m in request.messages if m["role"] == "user")


def writes(body: dict) -> bool:
    """The writer's requests: the task, not a previous step's answer."""
    return task_is(TASK)(body) and not task_is("previous step")(body)


def call(profile: str) -> Reply:
    return Reply(reply("call_subordinate", message=TASK, profile=profile))


def test_a_sequential_workflow_passes_each_answer_on(make_context, llm, usr_dir):
    make_profile(usr_dir, "writer")
    make_profile(usr_dir, "reviewer")
    workflow(usr_dir, "draft_review", "{sequential: [writer, reviewer]}")
    llm.add_rule(task_is("previous step (writer) answered"), Reply(answer("REVIEWED: owls hoot.")))
    llm.add_rule(task_is(TASK), Reply(answer("DRAFT: owls hoot at night.")))
    llm.script(call("draft_review"), Reply(answer("Here is the reviewed note.")))
    context = make_context(budget_calls=10)
    final = context.communicate(UserMessage("Write about owls.")).result(60)
    assert final == "Here is the reviewed note."

    requests = llm.chat_requests()
    assert len(requests) == 4  # A0, writer, reviewer, A0: the workflow's agent asks no model
    writer, reviewer = requests[1], requests[2]
    assert TASK in first_user(writer) and "previous step" not in first_user(writer)
    assert "DRAFT: owls hoot at night." in first_user(reviewer) and TASK in first_user(reviewer)
    assert "REVIEWED: owls hoot." in tool_result(requests[3])  # the answer reaches Agent 0
    assert "DRAFT" not in tool_result(requests[3])

    a1 = context.agent0.subordinate
    assert a1.config.profile == "draft_review" and a1.usage.calls == 0
    step = a1.subordinate  # the last step, its own subordinate, in the tree
    assert (step.number, step.config.profile) == (2, "reviewer")
    assert [a.agent_name for a in context.agents()] == ["A0", "A1", "A2"]
    calls = [i for i in context.log.items if i.type == "subagent" and i.agentno == 1]
    assert [c.kvps["profile"] for c in calls] == ["writer", "reviewer"]
    # One budget for the whole delegation: the steps count against the chat's.
    assert context.budget.spent.calls == 4
    assert "workflow" not in a1.data  # done: no progress left behind


def test_a_parallel_workflow_gives_the_aggregate_every_answer(make_context, llm, usr_dir):
    make_profile(usr_dir, "judge")
    llm.add_rule(task_is("Several agents worked on it at once"), Reply(answer("JUDGED: owls.")))
    rules = [
        lambda b: "careful researcher" in json.dumps(b["messages"][0]) and task_is(TASK)(b),
        lambda b: task_is(TASK)(b),
    ]
    llm.add_rule(rules[0], Reply(answer("VIEW ONE: owls are raptors.")))
    llm.add_rule(rules[1], Reply(answer("VIEW TWO: owls are nocturnal.")))
    workflow(usr_dir, "mixture", "{parallel: [researcher, default], aggregate: judge}")
    llm.script(call("mixture"), Reply(answer("The panel has spoken.")))
    context = make_context(budget_calls=9)
    assert context.communicate(UserMessage("Owls?")).result(60) == "The panel has spoken."

    requests = llm.chat_requests()
    assert len(requests) == 5
    judge = next(r for r in requests if "Several agents" in first_user(r))
    given = first_user(judge)
    assert TASK in given
    assert "## A2.1 (researcher) answered\nVIEW ONE: owls are raptors." in given
    assert "## A2.2 (default) answered\nVIEW TWO: owls are nocturnal." in given
    assert "JUDGED: owls." in tool_result(requests[-1])
    siblings = [i for i in context.log.items if i.type == "subagent" and i.agentno == 1]
    assert siblings[0].kvps["subordinates"] == ["A2.1", "A2.2"]
    assert siblings[1].kvps["profile"] == "judge"
    # The siblings shared what was left of the chat's budget (core of call_subordinates).
    assert context.budget.spent.calls == 5


def test_a_failing_step_ends_the_workflow_and_the_superior_hears_why(make_context, llm, usr_dir):
    workflow(usr_dir, "two_steps", "{sequential: [researcher, default]}")
    llm.add_rule(task_is(TASK), Reply(reply("teleport", headline="Looping")))
    llm.script(call("two_steps"), Reply(answer("I will do it myself.")))
    context = make_context(budget_calls=4)
    assert context.communicate(UserMessage("Owls?")).result(60) == "I will do it myself."
    told = json.dumps(llm.chat_requests()[-1].messages)
    assert "stopped without an answer" in told


def held(release: threading.Event) -> Reply:
    """A reply that streams its first piece, then waits for `release`: the step is working
    (its call reached the server) when the process 'dies', however slow the machine."""
    return Reply(answer("still " * 60), chunk_size=4, holds={1: release})


def chat_model_calls(llm) -> list:
    """The agents' model calls. Not the utility model's: the chat gets its name from it
    once the resumed run has answered, a call that can reach the server before the test
    counts (seen under load: 3 == 2 and 4 == 3)."""
    return llm.chat_requests("chat-model")


def restarted(request) -> bool:
    """The call carries the note that Cadre restarted (an agent resumed, not a new one)."""
    return "Cadre was restarted" in str(request.messages)


def test_a_restart_mid_sequential_goes_on_at_the_working_step(chats, llm, usr_dir):  # noqa: F811
    make_profile(usr_dir, "writer")
    make_profile(usr_dir, "reviewer")
    workflow(usr_dir, "draft_review", "{sequential: [writer, reviewer]}")
    release = threading.Event()
    reviewing = llm.add_rule(task_is("previous step (writer) answered"), held(release))
    writer = llm.add_rule(writes, Reply(answer("DRAFT: owls hoot.")))
    llm.script(call("draft_review"))
    context = chats.new_chat()
    run = context.communicate(UserMessage("Write about owls."))
    path = usr_dir / "chats" / context.id / "chat.json"

    def reviewer_working() -> bool:
        if not path.exists():
            return False
        saved = json.loads(path.read_text())
        agents = saved["agents"]
        return (
            len(agents) == 3 and agents[2]["profile"] == "reviewer" and saved["busy"] == [0, 1, 2]
        )

    # The reviewer's call recorded before the crash: no call of the old process comes late.
    wait_for(lambda: reviewing.hits == 1, what="the reviewer's call at the model")
    wait_for(reviewer_working, what="the writer done, the reviewer working, on disk")
    crash(context, run, usr_dir)
    llm.remove_rule(reviewing)
    release.set()

    again, runtime = reload(usr_dir)
    try:
        restored = again.get(context.id)
        assert [a.agent_name for a in restored.agents()] == ["A0", "A1", "A2"]
        asked = len(chat_model_calls(llm))
        llm.add_rule(task_is("previous step (writer) answered"), Reply(answer("REVIEWED.")))
        llm.script(Reply(answer("Reviewed note delivered.")))
        assert restored.continue_interrupted().result(60) == "Reviewed note delivered."
        after = chat_model_calls(llm)[asked:]
        # Only the reviewer ran again (the writer's answer was kept), then Agent 0.
        assert len(after) == 2
        assert "DRAFT: owls hoot." in first_user(after[0]) and restarted(after[0])
        assert "REVIEWED." in tool_result(after[-1])
        assert writer.hits == 1  # the writer's work was not done twice
        assert "workflow" not in restored.agent0.subordinate.data
    finally:
        runtime.stop()


def test_a_restart_mid_mixture_resumes_the_unfinished_view_then_aggregates(
    chats,  # noqa: F811
    llm,
    usr_dir,
):
    make_profile(usr_dir, "judge")
    workflow(usr_dir, "mixture", "{parallel: [researcher, default], aggregate: judge}")
    llm.add_rule(task_is("Several agents worked on it at once"), Reply(answer("JUDGED.")))
    researcher = llm.add_rule(
        lambda b: "careful researcher" in json.dumps(b["messages"][0]) and task_is(TASK)(b),
        Reply(answer("VIEW ONE.")),
    )
    release = threading.Event()
    viewing = llm.add_rule(task_is(TASK), held(release))
    llm.script(call("mixture"))
    context = chats.new_chat()
    run = context.communicate(UserMessage("Owls?"))
    path = usr_dir / "chats" / context.id / "chat.json"

    def one_view_done() -> bool:
        if not path.exists():
            return False
        saved = json.loads(path.read_text())
        agents = saved["agents"]
        return len(agents) == 4 and agents[2]["handed"] is not None and saved["busy"] == [0, 1, 3]

    # A2.2's call recorded before the crash: no call of the old process comes late.
    wait_for(lambda: viewing.hits == 1, what="A2.2's call at the model")
    wait_for(one_view_done, what="A2.1 answered on disk, A2.2 working")
    crash(context, run, usr_dir)
    llm.remove_rule(viewing)
    release.set()

    again, runtime = reload(usr_dir)
    try:
        restored = again.get(context.id)
        assert [a.agent_name for a in restored.agents()] == ["A0", "A1", "A2.1", "A2.2"]
        asked = len(chat_model_calls(llm))
        llm.add_rule(task_is(TASK), Reply(answer("VIEW TWO.")))
        llm.script(Reply(answer("The panel has spoken.")))
        assert restored.continue_interrupted().result(60) == "The panel has spoken."
        after = chat_model_calls(llm)[asked:]
        assert len(after) == 3  # the unfinished view, the judge, Agent 0
        assert restarted(after[0])  # A2.2 resumed; the judge and Agent 0 came after
        assert researcher.hits == 1  # the finished view was not asked again
        judged = first_user(after[1])
        assert "## A2.1 (researcher) answered\nVIEW ONE." in judged
        assert "## A2.2 (default) answered\nVIEW TWO." in judged
        assert "JUDGED." in tool_result(after[-1])
    finally:
        runtime.stop()


def test_the_call_subordinate_prompt_lists_the_shipped_panel(make_context):
    # In its line of the system prompt (core/prompt/tool_manuals.py), and in its whole manual.
    agent = make_context().agent0
    for brief in (True, False):
        prompt = agent.read_prompt("agent.system.tool.call_subordinate.md", brief=brief)
        assert "- `panel` (Panel): Use for a question that gains from two independent" in prompt


def test_agent0_of_a_workflow_profile_talks_through_its_model(make_context, llm):
    # A workflow works on a task given by a superior; Agent 0 has none: its loop runs.
    llm.script(Reply(answer("Hello from Agent 0.")))
    context = make_context(agent_profile="panel")
    assert context.communicate(UserMessage("Hi")).result(60) == "Hello from Agent 0."
    assert len(llm.chat_requests()) == 1
