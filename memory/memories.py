"""What agents do with memories: save, recall, delete and forget, with embeddings when an
embedding model is configured (an API key or base URL set for it), keywords always."""

from __future__ import annotations

import asyncio
import logging
import threading
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from helpers.errors import CadreError
from helpers.files import usr_path
from helpers.valid_text import valid_text
from memory.store import Filter, Memory, MemoryStore, area_path
from models.model import for_config
from models.tokens import count_tokens

if TYPE_CHECKING:
    from core.agent import Agent
    from core.history import Message
    from helpers.settings import Settings
    from models.llm import ModelConfig, UsageHandler

log = logging.getLogger(__name__)


def store_at(path: Path) -> MemoryStore:
    """The one store object of a database file in this process."""
    with _opening:  # two threads at once must not build two stores (two write locks)
        return _store_at(path)


def existing_store(path: Path) -> MemoryStore | None:
    """The store of an area that exists; None otherwise (a look or an edit creates no area)."""
    return store_at(path) if path.exists() else None


@cache
def _store_at(path: Path) -> MemoryStore:
    return MemoryStore(path)


_opening = threading.Lock()
#: Texts per embedding request (providers cap a request's inputs).
EMBED_BATCH = 100
#: Memories put into a prompt unasked: at most this many per store, and only those that
#: are really relevant, close in meaning or sharing two of the task's key words (all of
#: them if it has fewer). An earlier chat's "The result of 17 * 23 is 391", recalled into
#: "List the files" on the words "the" and "is", was answered instead.
RECALL_LIMIT = 3
RECALL_MIN_SIMILARITY = 0.6
RECALL_MIN_WORDS = 2


def open_area(settings: Settings) -> MemoryStore:
    """The memory area of agents with `settings`: the `memory_area` setting, which a
    project's chats get from their project (its own area unless it names another)."""
    return store_at(area_path(settings.memory_area))


async def agent_area(agent: Agent) -> MemoryStore:
    """The memory area of `agent`'s chat, opened off the event loop (opening may rebuild it)."""
    return await asyncio.to_thread(open_area, agent.config.settings)


def current_task(agent: Agent) -> Message | None:
    """The user's message the agent is working on (the pinned one of its current topic)."""
    return next((m for m in reversed(agent.history.current.messages) if m.pinned), None)


def embeddings_configured(config: ModelConfig) -> bool:
    """An embedding model is set, with its key or address (or it runs in this process)."""
    return bool(config.model and (config.api_key or config.api_base or config.local))


async def embed(
    config: ModelConfig, texts: list[str], on_usage: UsageHandler | None = None
) -> list[list[float]] | None:
    """Vectors of `texts`, or None when no embedding model is configured or it fails.

    Through the model seam (models.model), like chat calls: the same client choice,
    no-key fallback, `local/` models and retries; `on_usage` (an agent's
    `record_usage`) counts the tokens and cost against the chat and its budgets.
    """
    if not texts or not embeddings_configured(config):
        return None
    model = for_config(config)
    vectors: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        try:
            vectors += await model.embed(texts[start : start + EMBED_BATCH], on_usage)
        except CadreError as exc:  # keyword search still works
            log.warning("embedding with %s failed (%s); keyword search only", config.model, exc)
            return None
    return vectors


async def reindex(
    store: MemoryStore, config: ModelConfig, on_usage: UsageHandler | None = None
) -> int:
    """Embed every memory whose vector is missing or from another model; how many.

    A new model first drops the old model's vectors, so the two never meet.
    """
    if not embeddings_configured(config):
        return 0
    await asyncio.to_thread(store.switch_model, config.model)
    stale = await asyncio.to_thread(store.needs_reindex, config.model)
    done = 0
    for start in range(0, len(stale), EMBED_BATCH):
        batch = stale[start : start + EMBED_BATCH]
        vectors = await embed(config, [m.text for m in batch], on_usage)
        if vectors is None:
            break
        pairs = {m.id: v for m, v in zip(batch, vectors, strict=True)}
        await asyncio.to_thread(store.set_vectors, pairs, config.model)
        done += len(batch)
    return done


async def save(
    store: MemoryStore, config: ModelConfig, text: str, kind: str, source: str, tags: list[str],
    on_usage: UsageHandler | None = None,
) -> Memory:  # fmt: skip
    # The store speaks this model before a vector of it lands.
    await reindex(store, config, on_usage)
    vectors = await embed(config, [text], on_usage)
    return await asyncio.to_thread(
        store.save, text, kind, source, tags, vectors[0] if vectors else None, config.model
    )


async def remember(agent: Agent, text: str, kind: str, tags: list[str]) -> Memory:
    """Save `text` in the memory area of `agent`'s chat, masked by the chat's secret rule.

    A memory outlives the chat: it is shown in the Memory panel and recalled into
    other chats' prompts, so no secret value may reach it.
    """
    store = await agent_area(agent)
    source = f"chat {agent.chat.id}"
    masked = agent.mask(valid_text(text))
    return await save(
        store, agent.config.embed_model, masked, kind, source, agent.mask(tags),
        agent.record_usage,
    )  # fmt: skip


async def recall_for_prompt(agent: Agent) -> str:
    """The memories (and knowledge) most relevant to the agent's latest task, as prompt text,
    within the `memory_recall_tokens` cap; "" when off or nothing matches."""
    task = current_task(agent)
    if agent.recalled is not None and agent.recalled[0] is task:
        return agent.recalled[1]
    try:
        text = await _recall_for_prompt(agent)
    except Exception as exc:  # noqa: BLE001 - a memory problem must not cost the run
        log.warning("%s: no memories recalled: %s", agent.agent_name, exc)
        text = ""
    # Memories saved before secrets were masked (or before a value became a secret).
    text = agent.mask(text)
    agent.recalled = (task, text)
    return text


async def _recall_for_prompt(agent: Agent) -> str:
    settings = agent.config.settings
    message = current_task(agent)
    task = message.content if message is not None else ""
    if not settings.memory_recall_tokens or not task:
        return ""
    project = agent.chat.project
    stores = [await agent_area(agent)]
    for source in (None, project) if project else (None,):
        knowledge = await asyncio.to_thread(knowledge_store, source)
        await asyncio.to_thread(refresh_knowledge, knowledge, source)
        stores.append(knowledge)
    config, query = agent.config.embed_model, task[:2_000]
    found: list[Memory] = []
    vector = None
    for store in stores:
        if not await asyncio.to_thread(store.count):
            continue
        if embeddings_configured(config):
            await reindex(store, config, agent.record_usage)
            if vector is None:  # one query: embedded once for both stores
                vectors = await embed(config, [query], agent.record_usage)
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
    return agent.read_prompt("agent.extras.memories.md", memories="\n".join(lines)) if lines else ""


async def memorize(agent: Agent, answer: str) -> None:
    """After a run: let the utility model write down a reusable solution, if there is one."""
    message = current_task(agent)
    task = message.content if message is not None else ""
    if not task:
        return
    try:
        note = await agent.call_utility_model(
            agent.read_prompt("fw.memorize.sys.md"),
            agent.read_prompt("fw.memorize.msg.md", task=task[:4_000], answer=answer[:8_000]),
            heading="Remembering the solution",
        )
    except CadreError as exc:
        log.warning("no solution memorised: %s", exc)
        return
    if note.strip() and not note.strip().upper().startswith("NONE"):
        await remember(agent, note.strip(), "solutions", [])


#: The area holding the index of usr/knowledge/ (rebuilt from the files, not edited).
KNOWLEDGE_AREA = "_knowledge"


def knowledge_store(project: str | None = None) -> MemoryStore:
    """The index of the files in usr/knowledge/, or in `project`'s knowledge folder."""
    return store_at(area_path(f"{KNOWLEDGE_AREA}-{project}" if project else KNOWLEDGE_AREA))


def areas() -> list[str]:
    """The memory areas there are, by name (the knowledge indexes are none)."""
    folder = usr_path("memory")
    found = folder.iterdir() if folder.is_dir() else ()
    return sorted(p.name for p in found if p.is_dir() and not p.name.startswith(KNOWLEDGE_AREA))


def refresh_knowledge(store: MemoryStore, project: str | None = None) -> None:
    from memory.knowledge import refresh

    refresh(store, project)


async def recall(
    store: MemoryStore, config: ModelConfig, query: str, limit: int, threshold: float,
    where: Filter, every_word: bool = False, on_usage: UsageHandler | None = None,
) -> list[Memory]:  # fmt: skip
    """The memories that best match `query` (reindexing first if the model changed):
    close in meaning (`threshold`), or sharing a key word (not a stopword) with it.
    `on_usage` counts the embedding calls (an agent's `record_usage`)."""
    vector = None
    if embeddings_configured(config):
        await reindex(store, config, on_usage)
        vectors = await embed(config, [query], on_usage)
        vector = vectors[0] if vectors else None
    return await asyncio.to_thread(
        store.search, query, limit, where, vector, config.model, threshold, every_word
    )
