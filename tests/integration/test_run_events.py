"""One runner, run events: what a run announces, and one path for a subordinate's handover.

A subordinate's answer or failure reaches its superior the same way whether its
superior called it live (`call_subordinate`) or the chain was resumed at the
subordinate after a restart (the runner carries it up).
"""

from __future__ import annotations

import threading

from core.agent import Agent
from core.agent_types import UserMessage
from core.chat import Chat
from core.delegation.handover import run_subordinate
from core.events import (
    ChatSaved,
    IterationEnded,
    MonologueStarted,
    RunEnded,
    RunStarted,
    StateChanged,
    ToolEnded,
)
from initialize import ChatFactory, agent_config
from store.chats import ChatManager
from tests.support import probe
from tests.support.agents import ECHO_TOOL, answer, make_profile, reply, wait_for
from tests.support.fake_llm import Reply

KINDS = (RunStarted, MonologueStarted, IterationEnded, ToolEnded, RunEnded, StateChanged)


def record(context: Chat) -> list[str]:
    """What `context` announces, one word per event (subscribed on the agents' loop)."""
    heard: list[str] = []

    def describe(event: object) -> str:
        if isinstance(event, IterationEnded):
            return f"iteration:A{event.agent.number}:{event.outcome}"
        if isinstance(event, ToolEnded):
            return f"tool:A{event.agent.number}:{event.tool_name}"
        if isinstance(event, RunEnded):
            return f"ended:{event.answer}"
        if isinstance(event, MonologueStarted | RunStarted):
            return f"{type(event).__name__}:A{event.agent.number}"
        return type(event).__name__

    for kind in KINDS:
        context.events.subscribe(kind, lambda e: heard.append(describe(e)))
    return heard


def test_a_run_announces_its_steps_in_order(make_context, llm, usr_dir):
    make_profile(usr_dir, "echoer", tools={"echo": ECHO_TOOL})
    llm.script(Reply(reply("echo", text="hello")), Reply(answer("done")))
    context = make_context(agent_profile="echoer")
    heard = record(context)
    assert context.communicate(UserMessage("Echo hello.")).result(30) == "done"
    wait_for(lambda: heard[-1:] == ["ended:done"], what="the run's end")
    assert heard == [
        "RunStarted:A0",
        "MonologueStarted:A0",
        "tool:A0:echo",
        "iteration:A0:tool",
        "tool:A0:response",
        "iteration:A0:answer",
        "ended:done",
    ]


def test_the_chat_store_saves_on_run_events_and_announces_each_save(llm, runtime):
    chats = ChatManager(runtime, ChatFactory(runtime))
    llm.script(Reply(answer("391")))
    context = chats.new_chat()
    saved: list[str] = []
    context.events.subscribe(ChatSaved, lambda e: saved.append(e.chat_id))
    context.communicate(UserMessage("what is 17*23?")).result(30)
    wait_for(lambda: context.runner.ended is not None and context.runner.ended.done(),
             what="the run's final save")  # fmt: skip
    # Taking the task, the one iteration, the run's end (and perhaps the name).
    assert len(saved) >= 3 and set(saved) == {context.id}


def make_restored(runtime, profile: str, **settings: object) -> tuple[Chat, Agent]:
    context = Chat(agent_config(dict(settings) or None), runtime)
    a0 = context.agent0
    a0.add_user_message(UserMessage("Task."))
    a0.add_reply(reply("call_subordinate", message="Subtask.", reset=True))
    a1 = Agent(1, agent_config({**settings, "agent_profile": profile}), context)
    a0.link_subordinate(a1)
    a1.add_user_message(UserMessage("Subtask."))
    return context, a1


def test_a_restored_subordinates_failure_reaches_its_superior_as_a_live_one_does(
    make_context, llm, runtime
):
    """The superior reads the same report, whichever path carried it up."""
    broken = Reply("no JSON here at all")
    llm.script(
        Reply(reply("call_subordinate", message="Subtask.", profile="researcher", reset=True)),
        broken,
        Reply("still no JSON"),
        Reply(answer("A1 failed, so I stop.")),
    )
    live = make_context(max_unusable_replies=2)
    assert live.communicate(UserMessage("Task.")).result(30) == "A1 failed, so I stop."
    live_report = llm.chat_requests()[-1].messages[-1]["content"]
    assert "A1 could not do this" in live_report

    llm.reset()
    llm.script(broken, Reply("still no JSON"), Reply(answer("A1 failed, so I stop.")))
    context, a1 = make_restored(runtime, "researcher", max_unusable_replies=2)
    assert context.runner.start_chain(a1).result(30) == "A1 failed, so I stop."
    assert llm.chat_requests()[-1].messages[-1]["content"] == live_report


def test_an_intervention_a_restored_subordinate_never_read_goes_to_its_superior(
    llm, runtime, usr_dir
):
    probe.reset()
    make_profile(usr_dir, "finisher", tools={"finish": probe.FINISH_TOOL})
    probe.gates["finish"] = threading.Event()
    llm.script(
        Reply(reply("finish")),  # A1 ends with a tool that takes a while
        Reply(answer("Done, and noted.")),  # A0, after reading the intervention
    )
    context, a1 = make_restored(runtime, "finisher")
    run = context.runner.start_chain(a1)
    wait_for(lambda: probe.calls == ["finish"], what="the subordinate's last tool")
    context.communicate(UserMessage("also note the date"))
    probe.gates["finish"].set()
    assert run.result(30) == "Done, and noted."
    last = llm.chat_requests()[-1].messages[-1]["content"]
    assert "finished" in last and "also note the date" in last
    assert not context.runner.followups  # read in this run, not left for another


def test_a_subordinates_unread_intervention_never_replaces_its_superiors_own(runtime):
    """Both were told something neither read: the superior keeps the message sent to it; the
    one sent to the subordinate, which has ended, goes up only to a superior with none (and
    wakes it)."""
    context, a1 = make_restored(runtime, "default")
    a0 = context.agent0
    to_a0, to_a1 = UserMessage("for A0: stop after this"), UserMessage("for A1: use metres")

    async def hand_over(superior_has: UserMessage | None) -> tuple[UserMessage | None, bool]:
        a0.intervention, a1.intervention = superior_has, to_a1
        a0.wake.clear()

        async def answered() -> str:
            return "Done."

        handed = await run_subordinate(a0, a1, answered)
        assert handed.text == "Done." and a1.intervention is None
        return a0.intervention, a0.wake.is_set()

    assert runtime.submit(hand_over(to_a0)).result(10)[0] is to_a0
    assert runtime.submit(hand_over(None)).result(10) == (to_a1, True)


def test_a_running_chat_takes_new_settings_when_its_run_ends(llm, runtime):
    """Saving no longer reconfigures Agent 0: the run's end does (a RunEnded subscriber)."""
    from helpers.settings import load_settings, save_settings

    chats = ChatManager(runtime, ChatFactory(runtime))
    llm.script(Reply(answer("slow " * 30), chunk_size=4, delay=0.05))
    context = chats.new_chat()
    before = context.agent0.config.settings.max_unusable_replies
    run = context.communicate(UserMessage("Go."))
    wait_for(lambda: context.running, what="the run")
    save_settings(load_settings().model_copy(update={"max_unusable_replies": before + 4}))
    chats.apply_settings()
    chats.save_now(context)  # a save while it runs changes nothing of its config
    assert context.agent0.config.settings.max_unusable_replies == before
    run.result(30)
    wait_for(lambda: context.agent0.config.settings.max_unusable_replies == before + 4,
             what="the new settings after the run")  # fmt: skip
