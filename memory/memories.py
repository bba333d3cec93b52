"""Memories and their areas: save, recall, delete and forget, with embeddings when an
embedding model is configured (an API key or base URL set for it), keywords always.

For anyone: the memory tools, the Memory panel, backups. What a working agent does
with them (its chat's area, recall into the prompt, memorize) is core/memory_use.py.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from helpers.errors import CadreError
from memory.store import Filter, Memory, MemoryStore, area_path, memory_dir
from models.model import for_config

if TYPE_CHECKING:
    from helpers.settings import Settings
    from models.llm import ModelConfig, UsageHandler

log = logging.getLogger(__name__)


def store_at(path: Path) -> MemoryStore:
    """The one store object of a database file in this process; made again when its file
    is gone (a deleted person's space, accounts/service.py `retire_space`, for a new user
    of that name), where the old one could no longer open it."""
    with _opening:  # two threads at once must not build two stores (two write locks)
        store = _stores.get(path)
        if store is None or not path.exists():
            store = _stores[path] = MemoryStore(path)
        return store


def existing_store(path: Path) -> MemoryStore | None:
    """The store of an area that exists; None otherwise (a look or an edit creates no area)."""
    return store_at(path) if path.exists() else None


_stores: dict[Path, MemoryStore] = {}
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


def open_area(settings: Settings, space: Path | None = None) -> MemoryStore:
    """The memory area of agents with `settings` working for the owner of `space` (None:
    usr/'s): the `memory_area` setting, which a project's chats get from their project
    (its own area unless it names another), in the owner's space."""
    return store_at(area_path(settings.memory_area, space))


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
        answered = getattr(model, "answered_by", config.model)
        if answered != config.model:
            # A fallback's vectors are of another space: mixed into an index labelled with
            # this model, they would find nonsense (models/fallback.py).
            log.warning("embedding with %s failed, %s answered; its vectors are not mixed "
                        "into the index: keyword search only", config.model, answered)  # fmt: skip
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


#: The area holding the index of a space's knowledge/ (rebuilt from the files, not edited).
KNOWLEDGE_AREA = "_knowledge"


def knowledge_store(project: str | None = None, space: Path | None = None) -> MemoryStore:
    """The index of the files in the knowledge folder of `space`'s owner (None: usr/'s),
    or in their `project`'s; kept in their space, beside their memory areas."""
    area = f"{KNOWLEDGE_AREA}-{project}" if project else KNOWLEDGE_AREA
    return store_at(area_path(area, space))


def areas(space: Path | None = None) -> list[str]:
    """The memory areas of `space`'s owner (None: usr/'s), by name (the knowledge indexes
    are none)."""
    folder = memory_dir(space)
    found = folder.iterdir() if folder.is_dir() else ()
    return sorted(p.name for p in found if p.is_dir() and not p.name.startswith(KNOWLEDGE_AREA))


def refresh_knowledge(
    store: MemoryStore, project: str | None = None, space: Path | None = None
) -> None:
    """Bring `store` up to date with the knowledge folder of `space`'s owner (or their
    `project`'s): memory/knowledge.py `refresh`."""
    from memory.knowledge import refresh

    refresh(store, project, space)


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
