"""The memory panel's routes: list and search an area's memories, edit one, delete some.

Every area is the asker's own, in their space (`identity.space()`, accounts/spaces.py):
another person's memories are neither listed nor changed (an id of theirs is a 404)."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request
from pydantic import BaseModel, Field

from helpers.settings import Settings, load_settings
from initialize import model_config
from memory import memories
from memory.store import Filter, MemoryStore, area_path
from server.routes.routing import body, chats, error
from server.security import identity

memory_pages = Blueprint("memory", __name__)

#: Least closeness in meaning (cosine) for a memory to match a search in the panel.
#: Unrelated texts still score above 0 with most embedding models, so a minimum of 0
#: listed nearly every memory for a word none of them has.
SEARCH_MIN_SCORE = 0.5


class Edit(BaseModel):
    text: str = Field(min_length=1, max_length=20_000)


class Delete(BaseModel):
    ids: list[str] = Field(min_length=1, max_length=500)


def _area(settings: Settings) -> str:
    return request.args.get("area") or settings.memory_area


def _store() -> MemoryStore | None:
    """The asked area's store, the asker's; None when they have no such area (nothing to
    change there)."""
    return memories.existing_store(area_path(_area(load_settings()), identity.space()))


@memory_pages.get("/api/memory")
def listing() -> Response:
    """`?q=` searches (keywords, and meaning when embeddings are configured); else the newest."""
    settings = load_settings()
    area, space = _area(settings), identity.space()
    # The asker's areas, the one shown and the chats' default (which the page lists
    # once, even before its first memory).
    shown = {"areas": memories.areas(space), "area": area, "default_area": settings.memory_area}
    store = memories.existing_store(area_path(area, space))
    if store is None:
        return jsonify({"memories": [], **shown})
    query = (request.args.get("q") or "").strip()
    where = Filter(kind=request.args.get("kind", ""))
    if query:
        config = model_config(settings, "embed")
        # Every word of the query must be in a memory that matches by keywords.
        search = memories.recall(store, config, query, 50, SEARCH_MIN_SCORE, where, True)
        found = chats().runtime.submit(search).result(60)
    else:
        found = store.all(200, where)
    return jsonify({"memories": [m.to_dict() for m in found], **shown})


@memory_pages.post("/api/memory/<memory_id>")
def edit(memory_id: str) -> Response | tuple[Response, int]:
    data = body(Edit)
    store = _store()
    if store is None or not store.update_text(memory_id, data.text):
        return error(f"no memory {memory_id!r} in this area", 404)
    return jsonify({"ok": True})


@memory_pages.post("/api/memory/delete")
def delete() -> Response | tuple[Response, int]:
    data = body(Delete)
    store = _store()
    return jsonify({"deleted": store.delete(data.ids) if store is not None else 0})
