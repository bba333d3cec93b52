"""Stepping in while agents work: interventions, pause/resume, nudge, stop."""

from __future__ import annotations

import concurrent.futures
import threading
import time

import pytest

from core.agent import Agent
from core.agent_types import LoopData, UserMessage
from core.chat import Chat
from helpers.errors import InterventionException
from initialize import agent_config
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


def streaming_started(context: Chat) -> bool:
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
    context = Chat(agent_config({"agent_profile": "rec"}))
    agent = context.agent0
    agent.intervention = UserMessage("hold on, not that")
    with pytest.raises(InterventionException):
        await agent.process_reply(reply("record"), LoopData())
    assert probe.calls == []
    assert "hold on, not that" in history_text(agent)


def test_broadcast_reaches_superiors_as_far_as_asked(llm):
    context = Chat(agent_config())
    a0 = context.agent0
    a1 = Agent(1, a0.config, context)
    a2 = Agent(2, a0.config, context)
    for superior, subordinate in ((a0, a1), (a1, a2)):
        superior.link_subordinate(subordinate)
    context.working_agent = a2
    msg = UserMessage("stop and rethink")
    context.runner._intervene(msg, 1)
    assert (a2.intervention, a1.intervention, a0.intervention) == (msg, None, None)
    context.runner._take_pending()
    context.runner._intervene(msg, 2)
    assert (a2.intervention, a1.intervention, a0.intervention) == (msg, msg, None)
    context.runner._take_pending()
    context.runner._intervene(msg, -1)
    assert (a2.intervention, a1.intervention, a0.intervention) == (msg, msg, msg)


def test_pause_holds_the_stream_and_resume_continues(make_context, llm):
    sent: list[float] = []
    slow = Reply(answer("a fairly long answer that takes a while to stream"), chunk_size=4,
                 delay=0.03, sent_at=sent)  # fmt: skip
    llm.script(slow)
    context = make_context()
    run = context.communicate(UserMessage("go"))
    wait_for(lambda: streaming_started(context), what="the first streamed chunks")
    context.pause()
    wait_for(lambda: context.paused, what="the pause")
    # The whole reply has left the server: a run that went on would read it all now.
    wait_for(lambda: len(sent) == len(slow.content_pieces()), what="the reply's last chunk")
    other = make_context()  # another chat on the same loop: a run of its own, start to end

    def another_run(text: str) -> None:
        llm.script(Reply(answer(text)))
        assert other.communicate(UserMessage("and you?")).result(30) == text

    another_run("one")  # the chunk in flight at the pause has been shown by now
    frozen = context.log.version
    another_run("two")  # the held chat's chunks, there first, would have come before this
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


def test_intervention_on_a_fast_stream(make_context, llm):
    """Chunks arriving faster than the loop switches tasks still hit the chunk check point."""
    original = answer("x" * 4000)
    llm.script(Reply(original, chunk_size=2, delay=0.0005), Reply(answer("redirected")))
    context = make_context()
    run = context.communicate(UserMessage("go"))
    wait_for(lambda: streaming_started(context), what="the first streamed chunks")
    context.communicate(UserMessage("change of plan"))
    assert run.result(30) == "redirected"
    assert [i for i in context.log.items if i.type == "error"] == []


async def test_the_chunk_check_point_alone_catches_an_intervention(llm):
    """No runtime, no waker: only the per-chunk check can see this intervention."""
    llm.script(Reply(answer("first try " * 20), chunk_size=4), Reply(answer("second try")))
    context = Chat(agent_config())
    agent = context.agent0

    def intervene_once(item):
        if item.type == "agent" and item.kvps.get("thoughts") and not probe.calls:
            probe.calls.append("intervened")
            agent.intervention = UserMessage("shorter please")

    context.log.subscribe(intervene_once)
    assert await context.communicate(UserMessage("go")) == "second try"
    assert "shorter please" in llm.chat_requests()[-1].messages[-1]["content"]


def test_a_message_sent_as_the_run_ends_starts_the_next_run(make_context, llm, usr_dir):
    make_profile(usr_dir, "fin", tools={"finish": probe.FINISH_TOOL})
    probe.gates["finish"] = threading.Event()
    llm.script(Reply(reply("finish")), Reply(answer("did X too")))
    context = make_context(agent_profile="fin")
    run = context.communicate(UserMessage("do the thing"))
    wait_for(lambda: probe.calls == ["finish"], what="the final tool to start")
    assert context.communicate(UserMessage("ALSO DO X")) is run
    probe.gates["finish"].set()
    assert run.result(30) == "finished"
    wait_for(lambda: len(llm.chat_requests()) == 2, what="the follow-up run")
    wait_for(lambda: not context.running, what="the follow-up run to end")
    assert context.log.items[-1].type == "response"
    assert context.log.items[-1].content == "did X too"
    assert "ALSO DO X" in llm.chat_requests()[-1].messages[-1]["content"]


def test_stop_then_send_at_once_waits_for_the_old_run(make_context, llm):
    llm.script(slow_answer("never finished " * 8), Reply(answer("second run")))
    context = make_context()
    run = context.communicate(UserMessage("first"))
    wait_for(lambda: streaming_started(context), what="the first streamed chunks")
    context.stop()
    second = context.communicate(UserMessage("second"))
    assert second is not run
    assert second.result(30) == "second run"
    kinds = [(i.type, i.heading) for i in context.log.items if i.type in ("user", "info")]
    assert kinds == [("user", "User message"), ("info", "Stopped"), ("user", "User message")]


def test_stop_during_a_tool_leaves_a_result_in_history(make_context, llm, usr_dir):
    make_profile(usr_dir, "gated", tools={"gated": probe.GATED_TOOL})
    probe.gates["g"] = threading.Event()
    llm.script(Reply(reply("gated", gate="g")))
    context = make_context(agent_profile="gated")
    run = context.communicate(UserMessage("start"))
    wait_for(lambda: probe.calls == ["gated:g"], what="the tool to start")
    context.stop()
    with pytest.raises(concurrent.futures.CancelledError):
        run.result(10)
    last = context.agent0.history.current.messages[-1]
    assert "stopped before it finished" in last.content
    tool_item = next(i for i in context.log.items if i.type == "tool")
    assert tool_item.kvps["status"] == "stopped" and tool_item.content == "Stopped."


def test_nudge_cuts_a_hung_tool_short(make_context, llm, usr_dir):
    make_profile(usr_dir, "gated", tools={"gated": probe.GATED_TOOL})
    probe.gates["g"] = threading.Event()
    llm.script(Reply(reply("gated", gate="g")), Reply(answer("moved on")))
    context = make_context(agent_profile="gated")
    run = context.communicate(UserMessage("start"))
    wait_for(lambda: probe.calls == ["gated:g"], what="the tool to start")
    context.nudge()
    assert run.result(30) == "moved on"
    prompt = last_prompt_text(llm)
    assert "stopped before it finished" in prompt and "You seem to be stuck" in prompt


def test_interrupted_calls_still_count_their_usage(make_context, llm):
    llm.script(slow_answer("a long plan " * 4), Reply(answer("ok"), usage=(10, 2)))
    context = make_context()
    run = context.communicate(UserMessage("go"))
    wait_for(lambda: streaming_started(context), what="the first streamed chunks")
    context.communicate(UserMessage("stop that"))
    run.result(30)
    assert context.usage.calls == 2
    assert context.usage.completion_tokens > 2  # the cut call's tokens, estimated


def test_interrupted_reply_items_are_marked(make_context, llm):
    llm.script(slow_answer("the original " * 6), Reply(answer("new")))
    context = make_context()
    run = context.communicate(UserMessage("go"))
    wait_for(lambda: any(i.type == "response" for i in context.log.items), what="a live answer")
    context.communicate(UserMessage("no, other"))
    run.result(30)
    first_agent = next(i for i in context.log.items if i.type == "agent")
    first_response = next(i for i in context.log.items if i.type == "response")
    assert first_agent.kvps["status"] == "interrupted"
    assert first_response.kvps["status"] == "interrupted"
