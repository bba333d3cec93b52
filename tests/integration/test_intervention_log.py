"""An intervention's log item names the agent it went to, so the page can draw it there."""

from __future__ import annotations

from core.agent_types import UserMessage
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply


def test_an_intervention_to_a_subordinate_is_logged_as_that_agents(make_context, llm):
    llm.script(
        Reply(reply("call_subordinate", message="Count slowly.", reset=True)),
        Reply(answer("one, " * 60), chunk_size=4, delay=0.03),
        Reply(answer("Stopped counting.")),
        Reply(answer("A1 stopped.")),
    )
    context = make_context()
    run = context.communicate(UserMessage("Count with a helper."))
    wait_for(lambda: any(i.type == "response" and i.agentno == 1 and i.content
                         for i in context.log.items), what="A1 streaming")  # fmt: skip
    context.communicate(UserMessage("Stop counting now."))
    assert run.result(30) == "A1 stopped."
    users = [(i.heading, i.agentno) for i in context.log.items if i.type == "user"]
    assert users == [("User message", 0), ("User intervention", 1)]
