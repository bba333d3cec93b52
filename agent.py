"""Cadre's agents, as a program that embeds them sees them.

A `Chat` is one conversation; its Agent 0 talks to the user. Any agent may
hand a subtask to a subordinate (Agent N+1) through `call_subordinate`, and
the subordinate's answer comes back as that tool's result. `Agent.monologue()`
is the loop: build the prompt, stream the model, parse its reply, run the
tool, until a tool ends the loop, announcing each step as a run event.

The loop itself is `core/`'s own business: the agent and its loop in
core/agent.py, the chat and its controls in core/chat.py, the runner that
starts runs and takes interventions in core/runner.py. What tools, memory,
code execution and run-event handlers are given is a `RunContext`
(core/run_context.py), never the `Agent`.

    from agent import Chat, UserMessage
    from initialize import agent_config

    chat = Chat(agent_config(), runtime)
    answer = chat.communicate(UserMessage("Hello")).result()
"""

from core.agent import Agent
from core.agent_types import AgentConfig, LoopData, UserMessage
from core.chat import Chat

#: A chat by Agent Zero's name, for programs and tools written against it.
AgentContext = Chat

__all__ = ["Agent", "AgentConfig", "Chat", "LoopData", "UserMessage"]
