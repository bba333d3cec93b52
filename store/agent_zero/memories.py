"""Agent Zero's memories, brought into Cadre's memory areas and embedded again.

Agent Zero keeps a memory area per folder: `usr/memory/<area>/` (1.x: and a
project's at `usr/projects/<name>/.a0proj/memory/`), its vectors in a FAISS
index Cadre cannot use (another model's, another format) and its texts in the
docstore pickle beside it (read safely: store/agent_zero/memory_pickle.py).
Each text becomes a memory of Cadre's area of the same name (a project's: the
project's own area), of the same kind (`main`, `fragments`, `solutions`), with
the source `agent-zero <id>`, so that a second run finds it there and adds
nothing. Then the area is embedded with Cadre's embedding model (without one,
or if it fails, the memories are found by keywords, and embedded at the first
search that has a model). Chunks of knowledge files are not taken: Cadre
indexes the knowledge files themselves.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from core.agent_config import model_config
from helpers.settings import load_settings
from memory.memories import embeddings_configured, reindex, store_at
from memory.store import MemoryStore, area_path
from store.agent_zero.common import Report, entries, readable
from store.agent_zero.memory_pickle import Text, read_texts

log = logging.getLogger(__name__)

KINDS = {"main", "fragments", "solutions"}
DOCSTORE = "index.pkl"
SOURCE = "agent-zero "


def import_memories(source: Path, overwrite: bool, report: Report) -> None:
    """Every area of `source`'s memory/ folder into Cadre's area of its name."""
    for entry in entries(source / "memory", "memory", report):
        if entry.is_dir() and entry.name != "embeddings":  # embeddings: a cache, not memories
            import_area(entry, entry.name, f"memory {entry.name}", report)


def import_area(folder: Path, area: str, what: str, report: Report) -> None:
    """The memories of the Agent Zero area in `folder` into Cadre's area `area`."""
    pickled = folder / DOCSTORE
    if not readable(pickled, report) or not pickled.is_file():
        if (folder / "index.faiss").exists():
            report.left(what, f"no {DOCSTORE} beside its index.faiss: its texts are not there")
        return
    try:
        texts = read_texts(pickled)
    except (OSError, ValueError) as exc:
        report.left(f"{what} ({DOCSTORE})", f"damaged: {exc}; left out, the rest imported")
        log.warning("%s: %s not read: %s", what, pickled, exc)
        return
    own = [t for t in texts if not t.metadata.get("knowledge_source")]
    if len(own) < len(texts):
        report.left(f"{what}: {len(texts) - len(own)} knowledge chunk(s)",
                    "Cadre indexes the knowledge files themselves")  # fmt: skip
    store = store_at(area_path(area))
    have = {m.source for m in store.all(limit=10**9)}
    new = [t for t in own if SOURCE + t.id not in have]
    if len(own) > len(new):
        report.already(f"{what}: {len(own) - len(new)} memories in Cadre's area {area!r}")
    if not new:
        return
    _save(store, new)
    report.did(f"{what}: {len(new)} memories imported into Cadre's area {area!r}; "
               f"{_embed(store)}")  # fmt: skip


def _save(store: MemoryStore, texts: list[Text]) -> None:
    """One transaction per kind (save_many takes one kind), each text's source its id."""
    for kind in sorted({_kind(t) for t in texts}):
        batch = [t for t in texts if _kind(t) == kind]
        store.save_many([t.text for t in batch], kind, sources=[SOURCE + t.id for t in batch])


def _kind(text: Text) -> str:
    area = text.metadata.get("area")
    return area if isinstance(area, str) and area in KINDS else "main"


def _embed(store: MemoryStore) -> str:
    """Embed what has no vector yet with Cadre's model; what happened, in words."""
    config = model_config(load_settings(), "embed")
    if not embeddings_configured(config):
        return "no embedding model is set up in Cadre: found by keywords until one is"
    done = asyncio.run(reindex(store, config))
    missing = len(store.needs_reindex(config.model))
    if missing:
        return (f"{done} embedded again with {config.model}, {missing} not (the model did "
                "not answer: they are embedded at the first search)")  # fmt: skip
    return f"{done} embedded again with {config.model}"
