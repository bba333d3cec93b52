"""A tool call that was held for an answer when its chat was saved, going on after a restart.

The chat comes back with the call held (core/chat_record.py): its log item still asks,
the API lists it. When the run goes on (an answer to it starts it; a message or Continue
does too), the agent does not call the model first: it makes the held call again, the
tool found as the reply named it, with the same arguments and the same log item. The gate
(core/tooling/approval_gate.py) then takes the answer given meanwhile, or holds the call
again under the same id until one comes, and the loop goes on from its result as if the
process had never stopped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.reply.extract_tools import AgentReply

if TYPE_CHECKING:
    from core.agent import Agent
    from core.agent_types import LoopData
    from core.approvals import Held


async def go_on(agent: Agent, held: Held, loop_data: LoopData) -> str | None:
    """Make `held` again for `agent` (the answer when it ends the loop)."""
    item = next((i for i in agent.chat.log.items if i.id == held.id), None)
    reply = AgentReply(tool_name=held.call, tool_method=held.method, tool_args=dict(held.args))
    # Made once: the gate holds it again if it still asks (and notes it on the agent anew).
    agent.held = None
    approvals = agent.chat.approvals
    try:
        # Its own item, which asks, then shows the result (as the loop runs a call).
        return await agent.make_call(reply, agent.last_reply, loop_data, item)
    finally:
        approvals.release(held.id)  # answered, or no longer asked by the rules
        if item is not None and item.kvps.get("approval") == "pending":
            item.update(kvps={"approval": "cancelled"})
