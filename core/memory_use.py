"""How an agent uses memory: its chat's area, recall into the prompt, remembering, and
memorizing a run's solution. Every area and knowledge index is the chat owner's, in
their space (`ctx.space`, accounts/spaces.py).

memory/ is the store and its searches, for anyone (the Memory panel, backups);
this is the part that needs a working agent (core/run_context.py): its settings,
its masking rule, its usage, its utility model. The memory tools and the run
features (core/run_features.py) call it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from helpers.errors import CadreError
from helpers.valid_text import valid_text
from memory.memories import (
    RECALL_LIMIT,
    RECALL_MIN_SIMILARITY,
    RECALL_MIN_WORDS,
    embed,
    embeddings_configured,
    knowledge_store,
    open_area,
    refresh_knowledge,
    reindex,
    save,
)
from memory.store import Filter, Memory, MemoryStore
from models.tokens import count_tokens

if TYPE_CHECKING:
    from core.prompt.history import Message
    from core.run_context import RunContext

log = logging.getLogger(__name__)


async def area(ctx: RunContext) -> MemoryStore:
    """The memory area of the agent's chat, in its owner's space (another person's memory
    is never reached), opened off the event loop (opening may rebuild it)."""
    return await asyncio.to_thread(open_area, ctx.settings, ctx.space)


def current_task(ctx: RunContext) -> Message | None:
    """The user's message the agent is working on (the pinned one of its current topic)."""
    return next((m for m in reversed(ctx.history.current.messages) if m.pinned), None)


async def remember(ctx: RunContext, text: str, kind: str, tags: list[str]) -> Memory:
    """Save `text` in the memory area of the agent's chat, masked by the chat's secret rule.

    A memory outlives the chat: it is shown in the Memory panel and recalled into
    other chats' prompts, so no secret value may reach it.
    """
    store = await area(ctx)
    source = f"chat {ctx.chat_id}"
    masked = ctx.mask(valid_text(text))
    return await save(
        store, ctx.embed_model, masked, kind, source, ctx.mask(tags),
        ctx.record_usage,
    )  # fmt: skip


async def recall_for_prompt(ctx: RunContext) -> str:
    """The memories (and knowledge) most relevant to the agent's latest task, as prompt text,
    within the `memory_recall_tokens` cap; "" when off or nothing matches."""
    try:
        text = await _recall_for_prompt(ctx)
    except Exception as exc:  # noqa: BLE001 - a memory problem must not cost the run
        log.warning("%s: no memories recalled: %s", ctx.name, exc)
        text = ""
    # Memories saved before secrets were masked (or before a value became a secret).
    return ctx.mask(text)


async def _recall_for_prompt(ctx: RunContext) -> str:
    settings = ctx.settings
    message = current_task(ctx)
    task = message.content if message is not None else ""
    if not settings.memory_recall_tokens or not task:
        return ""
    project, space = ctx.project, ctx.space
    stores = [await area(ctx)]
    # The owner's knowledge (and their project's), brought up to date first: another
    # person's space is indexed at their first recall, not at start (run_ui.py).
    for source in (None, project) if project else (None,):
        knowledge = await asyncio.to_thread(knowledge_store, source, space)
        await asyncio.to_thread(refresh_knowledge, knowledge, source, space)
        stores.append(knowledge)
    config, query = ctx.embed_model, task[:2_000]
    found: list[Memory] = []
    vector = None
    for store in stores:
        if not await asyncio.to_thread(store.count):
            continue
        if embeddings_configured(config):
            await reindex(store, config, ctx.record_usage)
            if vector is None:  # one query: embedded once for both stores
                vectors = await embed(config, [query], ctx.record_usage)
                vector = next(iter(vectors or []), None)
        found += await asyncio.to_thread(
            store.search, query, RECALL_LIMIT, Filter(), vector, config.model,
            RECALL_MIN_SIMILARITY, False, RECALL_MIN_WORDS,
        )  # fmt: skip
    lines, used = [], 0
    for item in found:
        line = f"- [{item.kind}] {item.text}"
        used += count_tokens(line)
        if used > settings.memory_recall_tokens:
            break
        lines.append(line)
    return ctx.read_prompt("agent.extras.memories.md", memories="\n".join(lines)) if lines else ""


async def memorize(ctx: RunContext, answer: str) -> None:
    """After a run: let the utility model write down a reusable solution, if there is one."""
    message = current_task(ctx)
    task = message.content if message is not None else ""
    if not task:
        return
    try:
        note = await ctx.call_utility_model(
            ctx.read_prompt("fw.memorize.sys.md"),
            ctx.read_prompt("fw.memorize.msg.md", task=task[:4_000], answer=answer[:8_000]),
            heading="Remembering the solution",
        )
    except CadreError as exc:
        log.warning("no solution memorised: %s", exc)
        return
    if note.strip() and not note.strip().upper().startswith("NONE"):
        await remember(ctx, note.strip(), "solutions", [])
