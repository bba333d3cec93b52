"""The built-in subscribers of run events: memory recall and memorize, history compression.

They register on a chat's `RunEvents` the same way any other feature does
(core/events.py); the loop only announces its steps. Saving, naming and
the web pusher subscribe from their own layers (store/, server/).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import memory_use
from core.events import IterationEnded, MonologueStarted, RunEnded
from core.prompt import context_window
from core.run_context import agent_of

if TYPE_CHECKING:
    from core.chat import Chat


def subscribe(context: Chat) -> None:
    """Attach the built-in features to `context`'s events."""
    events = context.events

    async def recall(event: MonologueStarted) -> None:
        # Fills `agent.recalled`, which the loop puts in the prompt's extras; a superior
        # resuming after its subordinate keeps its task, and so its memories: no new search.
        agent = agent_of(event.ctx)
        task = memory_use.current_task(agent.ctx)
        if agent.recalled is None or agent.recalled[0] is not task:
            agent.recalled = (task, await memory_use.recall_for_prompt(agent.ctx))

    def compress(event: IterationEnded) -> None:
        if event.outcome == "tool":  # the history grew by a step: keep it within its limit
            context_window.compress_in_background(agent_of(event.ctx))

    def memorize(event: RunEnded) -> None:
        agent0 = context.agent0
        if event.answer is not None and agent0.config.settings.memory_memorize:
            # In the background: the run's answer is out, nothing waits for the note.
            events.spawn(memory_use.memorize(agent0.ctx, event.answer))

    events.subscribe(MonologueStarted, recall)
    events.subscribe(IterationEnded, compress)
    events.subscribe(RunEnded, memorize)
