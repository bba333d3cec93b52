"""An agent's history kept inside the model's window: compression in the background
after an iteration, and a wait for it before a model call only when the history is over.

The model-facing texts (summary instructions, the cut note) come from the
agent's prompt files; the algorithm is in `compression`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from core.prompt.compression import START_AT, Compressor, WindowShare, fit
from models.tokens import count_content, count_tokens

if TYPE_CHECKING:
    from core.agent import Agent

log = logging.getLogger(__name__)

#: The least of the window left for the reply: 5%, and at least a quarter of a small
#: window up to 1,024 tokens (a small model's reply must not be cut before its tool).
REPLY_SHARE = 0.05
REPLY_FLOOR = 1_024


def prompt_room(ctx_length: int) -> int:
    """Tokens a prompt may take in a window of `ctx_length`, the reply's room kept free."""
    reserve = max(ctx_length * REPLY_SHARE, min(REPLY_FLOOR, ctx_length * 0.25))
    return int(ctx_length - reserve)


#: A prompt estimated below this share of that is not counted exactly.
EXACT_FROM = 0.8


def window_share_of(agent: Agent) -> WindowShare:
    settings = agent.config.settings
    return WindowShare(
        # The chat model's window (a local model's may be smaller than the setting).
        limit=int(agent.config.chat_model.ctx_length * settings.history_ratio),
        current=settings.history_current_share,
        topics=settings.history_topics_share,
        bulks=settings.history_bulks_share,
    )


def compressor(agent: Agent) -> Compressor:
    async def summarize(text: str) -> str:
        summary = await agent.call_utility_model(
            agent.read_prompt("fw.topic_summary.sys.md"),
            agent.read_prompt("fw.topic_summary.msg.md", content=text),
            heading=f"{agent.agent_name}: Summarising earlier work",
        )
        return agent.read_prompt("fw.history_summary.md", summary=summary.strip())

    def note(tokens: int, file: str) -> str:
        return agent.read_prompt("fw.msg_cut.md", tokens=tokens, file=file)

    return Compressor(agent.history, window_share_of(agent), summarize, note)


async def _compress(agent: Agent) -> None:
    try:
        await compressor(agent).run()
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed summary must not end the run
        log.warning("%s: history compression failed (%s); cutting instead", agent.agent_name, exc)


def compress_in_background(agent: Agent) -> None:
    """After an iteration: start compressing if the history nears its limit."""
    if agent.compression is not None and not agent.compression.done():
        return
    if agent.history.tokens > window_share_of(agent).limit * START_AT:
        agent.compression = asyncio.ensure_future(_compress(agent))


def shrink_to_window(agent: Agent, messages: list[dict[str, Any]]) -> bool:
    """After the prompt is built: counted as the model counts, does it fit its window?

    Near the history's limit the whole prompt is counted with the model's own
    tokenizer (where known); if system prompt, history and extras together
    leave the reply less than its room (`prompt_room`), the history is cut by the excess and
    True is returned (build the prompt again).
    """
    settings = agent.config.settings
    window = prompt_room(agent.config.chat_model.ctx_length)
    # The history's own count plus the system prompt's: far from the window, the
    # exact count (a second tokenization of the whole prompt) is not needed.
    rough = agent.history.tokens + count_tokens(messages[0]["content"]) + 4 * len(messages)
    if rough < window * EXACT_FROM:
        return False
    total = sum(count_content(m["content"], settings.chat_model) + 4 for m in messages)
    if total <= window:
        return False
    fit(agent.history, max(0, agent.history.tokens - (total - window)), compressor(agent).note)
    return True


async def fit_history(agent: Agent) -> None:
    """Before a model call: the history fits its limit (waiting for compression only if over)."""
    window = window_share_of(agent)
    if agent.history.tokens <= window.limit:
        return
    running = agent.compression
    if running is not None and not running.done():
        await asyncio.shield(running)  # a stop cancels this wait, not the compression
    if agent.history.tokens > window.limit:
        await _compress(agent)
    if agent.history.tokens > window.limit:
        fit(agent.history, window.limit, compressor(agent).note)
