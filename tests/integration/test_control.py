"""Stepping in while agents work: interventions, pause/resume, nudge, stop."""

from __future__ import annotations

import concurrent.futures
import threading
import time

import pytest

from agent import Agent, AgentContext, LoopData, UserMessage
from helpers.errors import InterventionException
from initialize import initialize_agent
from tests.support import probe
from tests.support.agents import answer, history_text, make_profile, reply, wait_for
from tests.support.fake_llm import Hang, Reply


@pytest.fixture(autouse=True)
def _probe():
    probe.reset()
    yield
    for gate in probe.gates.values():
        gate.set()


def slow_answer(text: str) -> Reply:
    """An answer streamed in small pieces, slowly enough to step in."""
    return Reply(answer(text), chunk_size=4, delay=0.03)


def streaming_started(context: AgentContext) -> bool:
    return any(i.type == "agent" and i.kvps.get("thoughts") for i in context.log.items)


def last_prompt_text(llm) -> str:
    return "\n".join(m["content"] for m in llm.chat_requests()[-1].messages)


def test_intervention_during_stream_restarts_the_iteration(make_context, llm):
    original = answer("the original plan " * 3)
    llm.script(Reply(original, chunk_size=4, delay=0.03), Reply(answer("changed course")))
    context = make_context()
    run = context.communicate(UserMessage("write something"))
    wait_for(lambda: streaming_started(context), what="the first streamed chunks")
    assert context.communicate(UserMessage("make it about cats")) is run
    assert run.result(30) == "changed course"
    prompt = llm.chat_requests()[-1].messages
    assert "The user interrupted you" in prompt[-1]["content"]
    assert "make it about cats" in prompt[-1]["content"]
    # What the model had written so far stays in history, so it knows where it was.
    assert prompt[-2]["role"] == "assistant"
    assert len(prompt[-2]["content"]) >= 4 and original.startswith(prompt[-2]["content"])
    user_items = [i for i in context.log.items if i.type == "user"]
    assert [i.heading for i in user_items] == ["User message", "User intervention"]


def test_intervention_cuts_a_call_that_sends_nothing(make_context, llm):
    llm.script(Hang(seconds=30), Reply(answer("heard you")))
    context = make_context()
    run = context.communicate(UserMessage("hello?"))
    wait_for(lambda: len(llm.chat_requests()) == 1, what="the hanging request")
    started = time.monotonic()
    context.communicate(UserMessage("are you there"))
    assert run.result(30) == "heard you"
    # Far below the 30 s the server would hang: the call was abandoned, not waited out.
    assert time.monotonic() - started < 20, "the hanging call was not abandoned"
    assert "are you there" in last_prompt_text(llm)


def test_intervention_at_the_loop_start(make_context, llm, usr_dir):
    make_profile(usr_dir, "gated", tools={"gated": probe.GATED_TOOL})
    probe.gates["g"] = threading.Event()
    llm.script(Reply(reply("gated", gate="g")), Reply(answer("done after intervention")))
    context = make_context(agent_profile="gated")
    run = context.communicate(UserMessage("start"))
    wait_for(lambda: probe.calls == ["gated:g"], what="the tool to start")
    context.communicate(UserMessage("also mention dogs"))
    probe.gates["g"].set()
    assert run.result(30) == "done after intervention"
    prompt = llm.chat_requests()[-1].messages
    assert "gate g opened" in prompt[-1]["content"]
    assert "also mention dogs" in prompt[-1]["content"]
    assert len(llm.chat_requests()) == 2


async def test_intervention_before_the_tool_runs(llm, usr_dir):
    make_profile(usr_dir, "rec", tools={"record": probe.RECORD_TOOL})
    context = AgentContext(initialize_agent({"agent_profile": "rec"}))
    agent = context.agent0
    agent.intervention = UserMessage("hold on, not that")
    with pytest.raises(InterventionException):
        await agent.process_reply(reply("record"), LoopData())
    assert probe.calls == []
    assert "hold on, not that" in history_text(agent)


def test_broadcast_reaches_superiors_as_far_as_asked(llm):
    context = AgentContext(initialize_agent())
    a0 = context.agent0
    a1 = Agent(1, a0.config, context)
    a2 = Agent(2, a0.config, context)
    for superior, subordinate in ((a0, a1), (a1, a2)):
        superior.set_data(Agent.DATA_NAME_SUBORDINATE, subordinate)
        subordinate.set_data(Agent.DATA_NAME_SUPERIOR, superior)
    context.working_agent = a2
    msg = UserMessage("stop and rethink")
    context.control._intervene(msg, 1)
    assert (a2.intervention, a1.intervention, a0.intervention) == (msg, None, None)
    context.control._clear_interventions()
    context.control._intervene(msg, 2)
    assert (a2.intervention, a1.intervention, a0.intervention) == (msg, msg, None)
    context.control._clear_interventions()
    context.control._intervene(msg, -1)
    assert (a2.intervention, a1.intervention, a0.intervention) == (msg, msg, msg)


def test_pause_holds_the_stream_and_resume_continues(make_context, llm):
    llm.script(slow_answer("a fairly long answer that takes a while to stream"))
    context = make_context()
    run = context.communicate(UserMessage("go"))
    wait_for(lambda: streaming_started(context), what="the first streamed chunks")
    context.pause()
    wait_for(lambda: context.paused, what="the pause")
    time.sleep(0.2)  # at most the chunk in flight is shown after the pause
    frozen = context.log.version
    time.sleep(0.6)
    assert context.log.version == frozen and not run.done()
    context.resume()
    assert run.result(30) == "a fairly long answer that takes a while to stream"
    assert not context.paused


def test_nudge_restarts_a_stuck_agent(make_context, llm):
    llm.script(Hang(seconds=10), Reply(answer("unstuck")))
    context = make_context()
    run = context.communicate(UserMessage("work"))
    wait_for(lambda: len(llm.chat_requests()) == 1, what="the hanging request")
    context.nudge()
    assert run.result(30) == "unstuck"
    assert "You seem to be stuck" in last_prompt_text(llm)


def test_stop_cancels_the_run_and_the_chat_stays_usable(make_context, llm):
    llm.script(slow_answer("this will never be finished " * 4))
    context = make_context()
    run = context.communicate(UserMessage("go"))
    wait_for(lambda: streaming_started(context), what="the first streamed chunks")
    context.stop()
    with pytest.raises(concurrent.futures.CancelledError):
        run.result(10)
    wait_for(lambda: context.log.items[-1].type == "info", what="the stopped item")
    assert context.log.items[-1].heading == "Stopped"
    # Nothing half-written: the cut reply is not in history.
    assert [m.ai for m in context.agent0.history.current.messages] == [False]
    llm.script(Reply(answer("fresh start")))
    assert context.communicate(UserMessage("again")).result(30) == "fresh start"


def test_stop_while_paused_ends_the_run(make_context, llm):
    llm.script(slow_answer("paused forever " * 4))
    context = make_context()
    run = context.communicate(UserMessage("go"))
    wait_for(lambda: streaming_started(context), what="the first streamed chunks")
    context.pause()
    wait_for(lambda: context.paused, what="the pause")
    context.stop()
    with pytest.raises(concurrent.futures.CancelledError):
        run.result(10)
    wait_for(lambda: not context.paused, what="the pause to be lifted")
