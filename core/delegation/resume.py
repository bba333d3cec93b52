"""Carrying a chain on from where it stood: the work owed, finished bottom-up.

A run that starts at an agent other than Agent 0 (a chat restored while it
worked, a failed step run again) has no tool call waiting for that agent's
answer: the answer is handed to its superior as that call's result, and so on
up to Agent 0. The agents owed work are a tree, not only a chain: siblings
working at once (core/delegation/parallel.py) all resume, a finished sibling's saved
answer is used as it is, and the superior gets every answer as one result.
The step each working agent was in when the process stopped is marked
interrupted in the log (`mark_cut`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.delegation import handover, parallel, workflow

if TYPE_CHECKING:
    from core.agent import Agent
    from core.agent_types import UserMessage
    from core.chat import Chat
    from core.log import LogItem

#: Log kinds of a step's own work, marked when a restart cut it (a delegation is not: its
#: subordinate goes on from where it stood).
CUT_KINDS = frozenset({"agent", "tool", "code_exe", "browser", "mcp_tool", "response"})


def owed_work(start: Agent) -> list[Agent]:
    """The agents that owe an answer when a run starts at `start`: the chat's busy
    agents (saved when the process stopped), and `start` with its superiors."""
    owed = list(start.chat.busy)
    agent: Agent | None = start
    while agent is not None:
        if not any(a is agent for a in owed):
            owed.append(agent)
        agent = agent.superior
    return owed


async def finish(agent: Agent, owed: list[Agent]) -> str:
    """`agent`'s answer: first the work it had delegated and not received yet (those
    in `owed` below it), handed to it as its tool's result; then its own loop."""
    owed_ids = {id(a) for a in owed}
    # A workflow's agent takes its steps' handovers itself, as it goes on (workflow.py).
    flow = workflow.declared(agent)
    if parallel.batch_pending(agent, owed):
        handovers = await parallel.run_siblings(agent, lambda s: finish(s, owed))
        if flow is None:
            parallel.deliver_restored(agent, parallel.batch_result(agent, handovers))
    else:
        below = next((s for s in agent.subordinates if id(s) in owed_ids), None)
        if below is not None:
            handed = await handover.run_subordinate(agent, below, lambda: finish(below, owed))
            if flow is None:
                handover.deliver_restored(agent, handed)
            else:
                below.handed = handed
    return await agent.monologue()


def tell_resumed(chat: Chat, msg: UserMessage | None, failed_node: str = "",
                 how: str = "failed") -> Agent:  # fmt: skip
    """Tell the agents that were working (each sibling of a batch) that their work goes on,
    with the user's new message if one came; the agent the run starts at. `failed_node`:
    the node of a cluster that ran the chat and `how` it ended ("failed", "was shut down"),
    its chat taken over; "" for a restart."""
    agent = chat.working_agent or chat.agent0
    chat.interrupted = False
    for working in chat.working_agents() or [agent]:
        if working.held is not None:
            pass  # its held call goes on as it stood (core/tooling/held_call.py): not cut
        elif failed_node:
            working.add_warning(working.read_prompt("fw.msg_resumed_node.md", node=failed_node,
                                                    how=how))  # fmt: skip
        else:
            working.add_warning(working.read_prompt("fw.msg_resumed.md"))
        if msg is not None:
            working.add_user_message(msg, intervention=working is not chat.agent0)
    return agent


def mark_cut(context: Chat) -> None:
    """In a chat restored while it worked, mark the step each working agent was in as
    interrupted: its command or tool (its reply was taken, the result never came), or its
    reply still being written. A step that had ended keeps no mark. The page drew a cut
    command's card as if it had ended."""
    for agent in context.working_agents() or [context.working_agent or context.agent0]:
        if agent.held is not None:
            continue  # held for an answer, held again: nothing was cut
        step = _current_step(context, agent.agent_name)
        if not step or step[0].type != "agent" or step[0].kvps.get("status"):
            continue
        last = agent.history.last_message()
        in_tool = last is not None and last.ai  # its reply is in; the tool's result is not
        writing = not step[0].kvps.get("tool_name") or any(i.type == "response" for i in step)
        if not (in_tool or writing):
            continue
        for item in step:
            if item.type in CUT_KINDS and not item.kvps.get("status"):
                item.update(kvps={"status": "interrupted"})


def _current_step(context: Chat, name: str) -> list[LogItem]:
    """The items of agent `name` from its latest step's row (an `agent` item) on."""
    found: list[LogItem] = []
    for item in reversed(context.log.items):
        if (item.agent or f"A{item.agentno}") != name:
            continue
        found.append(item)
        if item.type == "agent":
            break
    return found[::-1]
