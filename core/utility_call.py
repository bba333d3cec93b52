"""One utility-model call of an agent (summaries, chat names, memories), logged.

The prompt is masked (a document or a task may hold a secret value) and the reply made
valid text (it goes on into names, summaries and memory), capped at `max_tokens`: a
utility call must never hold a model for long. Agent Zero's `util_model_call_before`
extensions may change the prompt first, `util_model_call_after` ones read the reply
(core/tooling/agent_zero/points.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core import watched_model
from core.tooling.agent_zero import extension_points as agent_zero
from helpers.valid_text import valid_text

if TYPE_CHECKING:
    from core.agent import Agent


async def call(agent: Agent, system: str, message: str, heading: str, max_tokens: int) -> str:
    """`agent`'s utility model asked `message` under `system`: its reply, masked."""
    item = agent.chat.log.log(
        "util", heading or f"{agent.agent_name}: Utility call", agentno=agent.number
    )
    call_data: dict[str, Any] = {"system": system, "message": message}
    await agent_zero.run_point(agent, "util_model_call_before", call_data=call_data)
    messages = [
        {"role": "system", "content": agent.mask(str(call_data["system"]))},
        {"role": "user", "content": agent.mask(str(call_data["message"]))},
    ]
    reply = await watched_model.watched(agent, "utility", agent.config.util_model).complete(
        messages, agent.record_usage, max_tokens=max_tokens
    )
    text = agent.mask(valid_text(reply.text))
    await agent_zero.run_point(agent, "util_model_call_after", call_data=call_data, response=text)
    item.update(content=text)
    return text
