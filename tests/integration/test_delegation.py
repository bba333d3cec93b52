"""Delegation end to end: real litellm against the fake model server, real files."""

from __future__ import annotations

import json

from core.agent import Agent
from core.agent_types import UserMessage
from core.chat import Chat
from initialize import agent_config
from tests.support.agents import answer, history_text, reply, wait_for
from tests.support.fake_llm import Reply

REPORT = "".join(f"Finding {n}: a detail that matters, with its source.\n" for n in range(40))


def delegate(message: str, profile: str = "", **extra: object) -> Reply:
    args = {"message": message, "reset": True, **extra}
    if profile:
        args["profile"] = profile
    return Reply(reply("call_subordinate", headline="Delegating", **args))


def system_of(request) -> str:
    return request.messages[0]["content"]


def test_long_result_is_passed_on_with_an_include(make_context, llm, usr_dir):
    assert len(REPORT) >= 2000
    context = make_context()
    saved = usr_dir / "chats" / context.id / "messages" / "1.txt"
    llm.script(
        delegate("Research the topic; report every finding.", "researcher"),
        Reply(answer(REPORT)),  # A1, the researcher
        Reply(answer("Here is the full report:\n\n§§include(messages/1.txt)")),  # A0
    )
    final = context.communicate(UserMessage("What is known about the topic?")).result(30)
    assert final == f"Here is the full report:\n\n{REPORT}"
    assert saved.read_text() == REPORT
    researcher_request, superior_request = llm.chat_requests()[1:]
    assert "careful researcher" in system_of(researcher_request)
    tool_result = superior_request.messages[-1]["content"]
    assert REPORT.strip() in tool_result
    assert "§§include(messages/1.txt)" in tool_result
    assert context.agent0.history.current.messages[-2].file == "messages/1.txt"
    assert "Do not rewrite it" in tool_result  # the call_sub hint
    response = context.log.items[-1]
    assert response.type == "response" and response.content == final


def test_three_deep_chain_returns_results_in_order(make_context, llm):
    llm.script(
        delegate("Plan and build the feature."),  # A0
        delegate("Write the function f.", "developer"),  # A1 (default)
        Reply(answer("def f(): return 42")),  # A2 (developer)
        Reply(answer("Built: def f(): return 42")),  # A1
        Reply(answer("Done. f returns 42.")),  # A0
    )
    context = make_context()
    assert context.communicate(UserMessage("Build f.")).result(30) == "Done. f returns 42."
    requests = llm.chat_requests()
    assert len(requests) == 5
    assert requests[1].messages[-1]["content"] == "Plan and build the feature."
    assert "# A1" in system_of(requests[1]) and "working for A0" in system_of(requests[1])
    assert requests[2].messages[-1]["content"] == "Write the function f."
    assert "# A2" in system_of(requests[2]) and "senior software developer" in system_of(
        requests[2]
    )
    assert "def f(): return 42" in requests[3].messages[-1]["content"]
    assert "Built: def f(): return 42" in requests[4].messages[-1]["content"]
    a1 = context.agent0.subordinate
    a2 = a1.subordinate
    assert (a1.config.profile, a2.config.profile) == ("default", "developer")
    assert [a.number for a in context.agents()] == [0, 1, 2]
    nested = [(i.agentno, i.type) for i in context.log.items if i.type in ("subagent", "response")]
    assert nested == [(0, "subagent"), (1, "subagent"), (2, "response"), (1, "response"),
                      (0, "response")]  # fmt: skip


def test_depth_guard_fires_and_the_agent_recovers(make_context, llm):
    llm.script(
        delegate("Summarise the file."),  # A0
        delegate("Summarise it for me.", "researcher"),  # A1 tries to go deeper
        Reply(answer("Summary: short.")),  # A1 does it itself
        Reply(answer("Summary: short.")),  # A0
    )
    context = make_context(max_delegation_depth=1)
    assert context.communicate(UserMessage("Summarise.")).result(30) == "Summary: short."
    warning = llm.chat_requests()[2].messages[-1]["content"]
    assert "maximum delegation depth (1)" in warning
    assert len(context.agents()) == 2


def test_runaway_guard_fires_and_the_agent_recovers(make_context, llm):
    task = "Find the three best sources on solar panel efficiency."
    llm.script(
        delegate(task),  # A0 → A1 (default)
        delegate("  find the three best sources on solar panel efficiency "),  # A1: same task
        Reply(answer("Sources: A, B, C.")),  # A1 works itself
        Reply(answer("Sources: A, B, C.")),  # A0
    )
    context = make_context()
    assert context.communicate(UserMessage("Sources?")).result(30) == "Sources: A, B, C."
    assert (
        "delegating it unchanged achieves nothing" in llm.chat_requests()[2].messages[-1]["content"]
    )
    assert len(context.agents()) == 2


def test_a_different_subtask_is_not_a_runaway(make_context, llm):
    llm.script(
        delegate("Write a report on solar panels."),
        delegate("Find the efficiency figures for solar panels.", "researcher"),
        Reply(answer("22%")),
        Reply(answer("Report: 22%.")),
        Reply(answer("Report: 22%.")),
    )
    context = make_context()
    assert context.communicate(UserMessage("Report.")).result(30) == "Report: 22%."
    assert len(context.agents()) == 3


def test_reset_with_the_same_profile_starts_a_new_subordinate(make_context, llm):
    first_task, second_task = "Count the apples in the cellar.", "Count the pears in the attic."
    llm.script(
        delegate(first_task, "researcher"),
        Reply(answer("12 apples")),
        Reply(answer("12 apples.")),
        delegate(second_task, "researcher"),  # reset=true, the same profile
        Reply(answer("7 pears")),
        Reply(answer("7 pears.")),
    )
    context = make_context()
    assert context.communicate(UserMessage("Apples?")).result(30) == "12 apples."
    first = context.agent0.subordinate
    assert context.communicate(UserMessage("Pears?")).result(30) == "7 pears."
    second = context.agent0.subordinate
    assert second is not first
    assert (second.number, second.config.profile) == (1, "researcher")
    assert first_task not in history_text(second) and second_task in history_text(second)
    assert first_task not in json.dumps(llm.chat_requests()[4].messages)  # the new A1's prompt
    assert first.superior is None  # the old one is cut loose
    assert context.agents() == [context.agent0, second]


def test_unknown_profile_is_repaired_by_the_model(make_context, llm):
    llm.script(
        delegate("Research X.", "ghost"),
        delegate("Research X.", "researcher"),
        Reply(answer("X is Y.")),
        Reply(answer("X is Y.")),
    )
    context = make_context()
    assert context.communicate(UserMessage("X?")).result(30) == "X is Y."
    warning = llm.chat_requests()[1].messages[-1]["content"]
    assert "Agent profile 'ghost' not found" in warning and "researcher (Researcher)" in warning


def test_an_intervention_reaches_the_working_subordinate(make_context, llm):
    # Slow enough (8 s) that the intervention lands mid-stream even on a loaded machine;
    # it cuts the stream short, so the test does not wait for it.
    slow = Reply(answer("the long way " * 10), chunk_size=4, delay=0.2)
    llm.script(
        delegate("Do the subtask."),
        slow,  # A1 streams slowly
        Reply(answer("the short way")),  # A1 after the intervention
        Reply(answer("Result: the short way")),  # A0
    )
    context = make_context()
    run = context.communicate(UserMessage("Task."))
    wait_for(lambda: any(i.type == "response" and i.agentno == 1 for i in context.log.items),
             what="the subordinate streaming")  # fmt: skip
    context.communicate(UserMessage("take the short way"))
    assert run.result(30) == "Result: the short way"
    requests = llm.chat_requests()
    assert "take the short way" in requests[2].messages[-1]["content"]  # A1's retry
    assert "take the short way" not in history_text(context.agent0)


def test_a_restored_subordinate_hands_its_answer_up(llm, runtime):
    """As after a restart: no call_subordinate call is waiting, the runner carries it up."""
    context = Chat(agent_config(), runtime)
    a0 = context.agent0
    a0.add_user_message(UserMessage("Research X."))
    a0.add_reply(reply("call_subordinate", message="Research X deeply.", reset=True))
    a1 = Agent(1, agent_config({"agent_profile": "researcher"}), context)
    a0.link_subordinate(a1)
    a1.add_user_message(UserMessage("Research X deeply."))
    llm.script(Reply(answer("X is deep.")), Reply(answer("Final: X is deep.")))
    run = context.runner.start_chain(a1)
    assert run.result(30) == "Final: X is deep."
    assert (
        "[Result of tool `call_subordinate`]\nX is deep."
        in llm.chat_requests()[1].messages[-1]["content"]
    )


def test_includes_in_a_subordinates_message_are_expanded(make_context, llm, usr_dir):
    context = make_context()
    data = usr_dir / "workdir" / "data.csv"
    data.parent.mkdir()
    data.write_text("a,b\n1,2\n")
    llm.script(
        delegate(f"Sum column b of:\n§§include({data})", "developer"),
        Reply(answer("The sum is 2.")),
        Reply(answer("2")),
    )
    assert context.communicate(UserMessage("Sum b.")).result(30) == "2"
    assert llm.chat_requests()[1].messages[-1]["content"] == "Sum column b of:\na,b\n1,2"


def test_an_intervention_the_subordinate_never_read_goes_to_its_superior(
    make_context, llm, usr_dir
):
    import threading

    from tests.support import probe
    from tests.support.agents import make_profile

    probe.reset()
    make_profile(usr_dir, "finisher", tools={"finish": probe.FINISH_TOOL})
    probe.gates["finish"] = threading.Event()
    llm.script(
        delegate("Finish up.", "finisher"),
        Reply(reply("finish")),  # A1 ends with a tool that takes a while
        Reply(answer("Done, and noted.")),  # A0, after reading the intervention
    )
    context = make_context()
    run = context.communicate(UserMessage("Task."))
    wait_for(lambda: probe.calls == ["finish"], what="the subordinate's last tool")
    context.communicate(UserMessage("also note the date"))
    probe.gates["finish"].set()
    assert run.result(30) == "Done, and noted."
    last = llm.chat_requests()[-1].messages[-1]["content"]
    assert "finished" in last and "also note the date" in last
