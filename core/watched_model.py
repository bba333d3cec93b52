"""An agent's model, watched: each call told as a `ModelCalled` event when someone listens.

`watched(agent, role, config)` is the model `config` names (core/agent_config.py
`model_for`); while a subscriber listens to `ModelCalled` (tracing, core/tracing/) or
`ModelCalling` (a plugin's handler) it is wrapped so that each `stream` and `complete` call
is announced before it goes out, with the messages a subscriber may still change, and once
it ended, with when it began, the messages, the reply or what ended it. Nobody listening,
the model itself is returned: the loop pays nothing for it.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Literal

from core.events import ModelCalled, ModelCalling
from helpers.errors import InterventionException

if TYPE_CHECKING:
    from core.agent import Agent
    from models.llm import ModelConfig, ModelReply
    from models.model import Model

Role = Literal["chat", "utility"]


def watched(agent: Agent, role: Role, config: ModelConfig) -> Model:
    """The model of `config` for `agent`'s calls in `role`, told when anyone listens."""
    model = agent.config.model_for(config)
    events = agent.chat.events
    if not (events.wants(ModelCalled) or events.wants(ModelCalling)):
        return model
    return _Watched(agent, role, model)  # type: ignore[return-value]


class _Watched:
    """A model whose calls are announced (the `Model` protocol; the rest passed through)."""

    def __init__(self, agent: Agent, role: Role, model: Model) -> None:
        self.agent, self.role, self.model = agent, role, model
        self.config, self.name = model.config, model.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)  # embed, count_tokens

    async def stream(self, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ModelReply:
        return await self._told(self.model.stream(messages, *args, **kwargs), messages)

    async def complete(
        self, messages: list[dict[str, Any]], *args: Any, **kwargs: Any
    ) -> ModelReply:
        return await self._told(self.model.complete(messages, *args, **kwargs), messages)

    async def _told(self, call: Any, messages: list[dict[str, Any]]) -> ModelReply:
        started, reply, error = time.time_ns(), None, None
        try:
            events = self.agent.chat.events
            if events.wants(ModelCalling):
                # `call` has not begun: the list it was given, changed here, is what it sends.
                await events.emit(ModelCalling(self.agent.ctx, self.role, self.config.model,
                                               messages))  # fmt: skip
            reply = await call
            return reply
        except asyncio.CancelledError as exc:
            # Cancelled because the user stepped in (core/interventions.py woke the agent),
            # or the run was stopped.
            error = InterventionException() if self.agent.wake.is_set() else exc
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            event = ModelCalled(self.agent.ctx, self.role, self.config.model, started,
                                messages, reply, error)  # fmt: skip
            await self.agent.chat.events.emit(event)
