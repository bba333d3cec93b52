"""Agent Zero's memory texts, read from its FAISS docstore without running its pickle.

Agent Zero (older layout and 1.x alike) keeps each memory area as LangChain's
FAISS `save_local` writes it: `index.faiss` (the vectors, of its embedding
model: of no use to Cadre's) and `index.pkl`, a pickle of the tuple
`(InMemoryDocstore, {position: id})` whose docstore's `_dict` maps each id to a
LangChain `Document` (`page_content`, `metadata` with `area`, `timestamp`,
`knowledge_source`...). The texts live only there.

A pickle may name any callable and have it called, so `pickle.load` on a
file from elsewhere runs whatever it says. Here a restricted unpickler
resolves only the names such a file needs, each to a harmless stand-in that
keeps the state it is given (the two LangChain classes under the module
paths LangChain has used) or to a plain type (`set`, `frozenset`, `datetime`);
any other name stops the reading with the name in the error. LangChain itself
is not needed (Cadre does not install it). Why not another copy: Agent Zero
saves the texts nowhere else (its `knowledge_import.json` keeps only ids).
"""

from __future__ import annotations

import datetime
import io
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Largest index.pkl read.
LIMIT = 256 * 1024 * 1024


class _Kept:
    """What a LangChain object becomes: nothing but the state it was pickled with."""

    state: Any = None

    def __new__(cls, *args: Any, **kwargs: Any) -> _Kept:
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.state = kwargs or None

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def fields(self) -> dict[str, Any]:
        """The object's attributes: pydantic 2 keeps them under `__dict__`, pydantic 1 and
        plain classes as the state itself (a `(dict, slots)` pair with slots)."""
        state = self.state
        if isinstance(state, tuple) and state and isinstance(state[0], dict):
            state = state[0]
        if not isinstance(state, dict):
            return {}
        inner = state.get("__dict__")
        return inner if isinstance(inner, dict) else state


class _Document(_Kept):
    pass


class _Docstore(_Kept):
    pass


_ALLOWED: dict[tuple[str, str], Any] = {
    **{(m, "Document"): _Document for m in (
        "langchain_core.documents.base", "langchain_core.documents",
        "langchain.schema.document", "langchain.docstore.document", "langchain.schema",
    )},
    **{(m, "InMemoryDocstore"): _Docstore for m in (
        "langchain_community.docstore.in_memory", "langchain.docstore.in_memory",
    )},
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("datetime", "datetime"): datetime.datetime,
    ("datetime", "date"): datetime.date,
}  # fmt: skip


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        found = _ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(
                f"it names {module}.{name}, which a memory file does not hold (not read: "
                "it could run code)"
            )
        return found

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("it refers to outside objects (not read)")


@dataclass(frozen=True)
class Text:
    """One memory of Agent Zero's: its id, text and metadata."""

    id: str
    text: str
    metadata: dict[str, Any]


def read_texts(path: Path) -> list[Text]:
    """The memories of an `index.pkl`; ValueError saying why when it cannot be read."""
    size = path.stat().st_size
    if size > LIMIT:
        raise ValueError(f"over {LIMIT // 2**20} MB")
    try:
        loaded = _Restricted(io.BytesIO(path.read_bytes())).load()
    except (pickle.UnpicklingError, EOFError, RecursionError, TypeError, AttributeError,
            IndexError, KeyError, ValueError, UnicodeDecodeError) as exc:  # fmt: skip
        raise ValueError(f"not a memory index ({exc})") from None
    docstore = loaded[0] if isinstance(loaded, tuple) and loaded else loaded
    if not isinstance(docstore, _Docstore):
        raise ValueError("not a memory index (no document store in it)")
    documents = docstore.fields().get("_dict")
    if not isinstance(documents, dict):
        raise ValueError("not a memory index (its document store holds no documents)")
    texts = []
    for key, doc in documents.items():
        fields = doc.fields() if isinstance(doc, _Document) else {}
        content, metadata = fields.get("page_content"), fields.get("metadata")
        if isinstance(content, str) and content.strip():
            meta = metadata if isinstance(metadata, dict) else {}
            texts.append(Text(str(key), content, meta))
    return texts
