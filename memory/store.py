"""Memories on disk: one SQLite database per area, searched by keywords and by meaning.

`<space>/memory/<area>/memory.db` (each person's own, in their space: usr/ for the
desktop mode and the first admin, usr/users/<name>/ for anyone else) holds rows of
text with metadata (kind such as main / fragments / solutions, source, created_at,
tags). Keyword search is SQLite FTS5 (always there); when an embedding model is
configured each row also has a vector, and search ranks by both (reciprocal rank
fusion). The embedding model's id is stored with the vectors: a different model
makes `needs_reindex` true instead of silently comparing vectors of two models.

Writes are transactions in WAL mode, so chats can write at once and a crash
mid-write leaves the last committed state (in a cluster, a rollback journal and a lock
the nodes share: memory/sharing.py). Every change is also appended to
`export.jsonl`; a database that turns out damaged is set aside and rebuilt
from it rather than crashing.

Vectors are compared in Python (this Python's sqlite3 cannot load
extensions such as sqlite-vec): fine for thousands of memories.

Why one module past 400 lines (docs/architecture.md, "Module size"): it is one
store: its schema, its writes with their export log, the rebuild from that log
and both searches keep to one connection discipline and one row shape. The
keyword and vector helpers at the top (about 60 lines) are the search's parts;
they move to a module of their own when a second store needs them.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sqlite3
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.files import usr_dir
from memory import sharing
from memory.stopwords import STOPWORDS

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT UNIQUE NOT NULL,
    text TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'main',
    source TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',
    created_at REAL NOT NULL,
    vector BLOB
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    text, content='memories', content_rowid='rowid'
);
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE OF text ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO memories_fts(rowid, text) VALUES (new.rowid, new.text);
END;
"""


def schema_problem(db: sqlite3.Connection) -> str | None:
    """What makes `db` no memory database this Cadre can use (a table of ours there with
    columns missing), or None. A database without our tables is fine: they are made."""
    expected = sqlite3.connect(":memory:")
    try:
        expected.executescript(_SCHEMA)
        wanted = [
            r[0] for r in expected.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        for table in wanted:
            have = {r[1] for r in db.execute(f"PRAGMA table_info({table!r})")}
            need = {r[1] for r in expected.execute(f"PRAGMA table_info({table!r})")}
            if have and not need <= have:
                return f"its table {table!r} lacks {', '.join(sorted(need - have))}"
    finally:
        expected.close()
    return None


@dataclass
class Memory:
    """One remembered text and what is known about it."""

    id: str
    text: str
    kind: str = "main"
    source: str = ""
    tags: list[str] = field(default_factory=list)
    created_at: float = 0.0
    #: Relevance of a search hit (higher is better; 0 outside searches).
    score: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "text": self.text, "kind": self.kind, "source": self.source,
            "tags": self.tags, "created_at": self.created_at, "score": round(self.score, 4),
        }  # fmt: skip


@dataclass(frozen=True)
class Filter:
    """Which memories a search or deletion may touch (empty: any)."""

    kind: str = ""
    source: str = ""
    tag: str = ""

    def where(self) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if self.kind:
            clauses.append("m.kind = ?")
            params.append(self.kind)
        if self.source:
            clauses.append("m.source = ?")
            params.append(self.source)
        if self.tag:
            clauses.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE value = ?)")
            params.append(self.tag)
        return (" AND ".join(clauses) or "1"), params


def memory_dir(space: Path | None = None) -> Path:
    """The memory areas' folder of `space`'s owner (accounts/spaces.py; None: usr/, the
    desktop mode's and the first admin's)."""
    return (space if space is not None else usr_dir()) / "memory"


def area_path(area: str, space: Path | None = None) -> Path:
    """The database of memory area `area` of `space`'s owner: `<space>/memory/<area>/memory.db`."""
    safe = "".join(c for c in area if c.isalnum() or c in "-_") or "default"
    return memory_dir(space) / safe / "memory.db"


def _event(memory: Memory) -> dict[str, Any]:
    """A memory as the export file records it (without a search's score)."""
    return {k: v for k, v in memory.to_dict().items() if k != "score"}


def pack(vector: list[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack(blob: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))


def cosine(a: list[float], b: list[float]) -> float:
    if len(a) != len(b):
        return 0.0  # vectors of two different models never match
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def words_of(text: str) -> list[str]:
    """The words of `text`, lower-case, split as the FTS tokenizer does ("e-mail": e, mail)."""
    return [w for w in re.split(r"[\W_]+", text.lower()) if w]


def key_words(text: str) -> list[str]:
    """The words of `text` that can tell memories apart: no stopwords, each once."""
    return list(dict.fromkeys(w for w in words_of(text) if w not in STOPWORDS))


#: Key words at least this long also match longer forms ("colour": "colours", "prefer":
#: "preferred"), in place of stemming.
PREFIX_FROM = 4


def _term(word: str) -> str:
    return f'"{word}"*' if len(word) >= PREFIX_FROM else f'"{word}"'


def fts_query(text: str, every_word: bool = False) -> str:
    """Key words as an FTS5 query: each quoted (no syntax from outside); any or every must
    match. "" when the text has none ("what is it?"): such a query matches nothing."""
    return (" AND " if every_word else " OR ").join(_term(w) for w in key_words(text))


def shared_words(query_words: list[str], text: str) -> int:
    """How many of `query_words` `text` holds (as a word, or the start of a longer one)."""
    present = set(words_of(text))
    return sum(
        1
        for w in query_words
        if w in present or (len(w) >= PREFIX_FROM and any(p.startswith(w) for p in present))
    )


class MemoryStore:
    """One area's database. Safe to use from several threads (one connection each call)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.export = path.with_name("export.jsonl")
        self._lock = threading.Lock()  # serialises this process's writers (SQLite does the rest)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._open_or_rebuild()

    # -- connection and recovery -----------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # In a cluster, held against the other nodes from open to close (memory/sharing.py).
        with sharing.held(self.path):
            db = sqlite3.connect(self.path, timeout=30)
            db.row_factory = sqlite3.Row
            try:
                db.execute(f"PRAGMA journal_mode={sharing.journal_mode()}")
                db.execute("PRAGMA busy_timeout=30000")
                yield db
            finally:
                db.close()

    def _open_or_rebuild(self) -> None:
        try:
            with self._connect() as db:
                db.executescript(_SCHEMA)
                db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('version', ?)", (str(SCHEMA_VERSION),)
                )
                db.execute("SELECT count(*) FROM memories").fetchone()
                db.commit()
        except sqlite3.DatabaseError as exc:
            # Only damage: a locked or full database is a problem of the moment.
            if getattr(exc, "sqlite_errorcode", None) not in _DAMAGED:
                raise
            kept = self.path.with_name(f"memory.damaged-{int(time.time())}.db")
            log.error("memory database %s is damaged (%s); kept as %s, rebuilt from %s",
                      self.path, exc, kept, self.export.name)  # fmt: skip
            os.replace(self.path, kept)
            for extra in ("-wal", "-shm"):
                Path(f"{self.path}{extra}").unlink(missing_ok=True)
            self._rebuild()

    def _rebuild(self) -> None:
        with self._connect() as db:
            db.executescript(_SCHEMA)
            db.execute("INSERT OR IGNORE INTO meta VALUES ('version', ?)", (str(SCHEMA_VERSION),))
            for event in self._events():
                if "deleted" in event:
                    db.execute("DELETE FROM memories WHERE id = ?", (event["deleted"],))
                else:
                    self._insert(db, Memory(**{k: event[k] for k in Memory.__dataclass_fields__
                                               if k in event and k != "score"}))  # fmt: skip
            db.commit()

    def _events(self) -> Iterator[dict[str, Any]]:
        if not self.export.exists():
            return
        for line in self.export.read_text(encoding="utf-8").splitlines():
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a crash: the rest still counts

    def _log(self, events: list[dict[str, Any]]) -> None:
        with open(self.export, "a", encoding="utf-8") as handle:
            for event in events:
                handle.write(json.dumps(event, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    @staticmethod
    def _insert(db: sqlite3.Connection, memory: Memory, vector: bytes | None = None) -> None:
        # An upsert, not INSERT OR REPLACE: a replaced row would leave the keyword
        # index stale (REPLACE fires no delete trigger).
        db.execute(
            "INSERT INTO memories (id, text, kind, source, tags, created_at, vector)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET text = excluded.text,"
            " kind = excluded.kind, source = excluded.source, tags = excluded.tags,"
            " vector = excluded.vector",
            (memory.id, memory.text, memory.kind, memory.source, json.dumps(memory.tags),
             memory.created_at, vector),
        )  # fmt: skip

    # -- writing ---------------------------------------------------------------

    def save(
        self, text: str, kind: str = "main", source: str = "", tags: list[str] | None = None,
        vector: list[float] | None = None, model: str = "",
    ) -> Memory:  # fmt: skip
        memory = Memory(uuid.uuid4().hex[:12], text, kind, source, list(tags or []), time.time())
        with self._lock, self._connect() as db:
            self._insert(db, memory, pack(vector) if vector else None)
            if vector and model:  # the first vectors name the model; a change goes via reindex
                db.execute("INSERT OR IGNORE INTO meta VALUES ('embed_model', ?)", (model,))
            db.commit()
            self._log([_event(memory)])
        return memory

    def save_many(
        self, texts: list[str], kind: str = "main", source: str = "",
        sources: list[str] | None = None,
    ) -> list[Memory]:  # fmt: skip
        """Several memories in one transaction and one write to the export (a file's chunks);
        `sources`: each its own (imported memories, by their origin's id), else `source`."""
        now = time.time()
        each = sources if sources is not None else [source] * len(texts)
        memories = [Memory(uuid.uuid4().hex[:12], text, kind, origin, [], now)
                    for text, origin in zip(texts, each, strict=True)]  # fmt: skip
        with self._lock, self._connect() as db:
            for memory in memories:
                self._insert(db, memory)
            db.commit()
            self._log([_event(memory) for memory in memories])
        return memories

    def delete(self, ids: list[str]) -> int:
        with self._lock, self._connect() as db:
            marks = ",".join("?" * len(ids))
            gone = db.execute(f"DELETE FROM memories WHERE id IN ({marks})", ids).rowcount
            db.commit()
            self._log([{"deleted": i} for i in ids])
        return gone

    def delete_source(self, source: str) -> int:
        """Delete every memory from `source` (a knowledge file that changed)."""
        with self._connect() as db:
            ids = [r[0] for r in db.execute("SELECT id FROM memories WHERE source = ?", (source,))]
        return self.delete(ids) if ids else 0

    def update_text(self, memory_id: str, text: str) -> bool:
        with self._lock, self._connect() as db:
            row = db.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is None:
                return False
            db.execute(
                "UPDATE memories SET text = ?, vector = NULL WHERE id = ?", (text, memory_id)
            )
            db.commit()
            memory = self.get(memory_id)  # logged under the lock: a delete cannot slip between
            if memory is not None:
                self._log([_event(memory)])
        return True

    def switch_model(self, model: str) -> None:
        """From now on vectors are `model`'s: another model's are dropped (to be re-made)."""
        if self.embed_model() == model:
            return
        with self._lock, self._connect() as db:
            db.execute("UPDATE memories SET vector = NULL")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('embed_model', ?)", (model,))
            db.commit()

    def set_vectors(self, vectors: dict[str, list[float]], model: str) -> None:
        """Store embeddings of `model` (a reindex writes them all)."""
        with self._lock, self._connect() as db:
            db.executemany("UPDATE memories SET vector = ? WHERE id = ?",
                           [(pack(v), i) for i, v in vectors.items()])  # fmt: skip
            db.execute("INSERT OR REPLACE INTO meta VALUES ('embed_model', ?)", (model,))
            db.commit()

    # -- reading ---------------------------------------------------------------

    def embed_model(self) -> str:
        with self._connect() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'embed_model'").fetchone()
        return row[0] if row else ""

    def needs_reindex(self, model: str) -> list[Memory]:
        """Memories whose vector is missing or from another model than `model`."""
        stale = self.embed_model() != model
        with self._connect() as db:
            sql = "SELECT * FROM memories m" + ("" if stale else " WHERE m.vector IS NULL")
            return [_row(r) for r in db.execute(sql).fetchall()]

    def get(self, memory_id: str) -> Memory | None:
        with self._connect() as db:
            row = db.execute("SELECT * FROM memories m WHERE id = ?", (memory_id,)).fetchone()
        return _row(row) if row else None

    def all(self, limit: int = 200, where: Filter | None = None) -> list[Memory]:
        clause, params = (where or Filter()).where()
        sql = f"SELECT * FROM memories m WHERE {clause} ORDER BY created_at DESC LIMIT ?"
        with self._connect() as db:
            return [_row(r) for r in db.execute(sql, [*params, limit]).fetchall()]

    def count(self) -> int:
        with self._connect() as db:
            return int(db.execute("SELECT count(*) FROM memories").fetchone()[0])

    def search(
        self, query: str, limit: int = 5, where: Filter | None = None,
        vector: list[float] | None = None, model: str = "", threshold: float = 0.0,
        every_word: bool = False, min_words: int = 1,
    ) -> list[Memory]:  # fmt: skip
        """Best matches: by keywords, and by meaning when `vector` (of `model`) is given.

        Keywords leave out stopwords. `every_word`: a keyword match needs all the
        query's key words (for forgetting, where one shared word must not be
        enough); `min_words`: at least this many of them, or all when the query has
        fewer (a relevance threshold, as `threshold` is for meaning).
        """
        clause, params = (where or Filter()).where()
        by_words: list[Memory] = []
        match = fts_query(query, every_word)
        wanted = key_words(query)
        needed = min(min_words, len(wanted))
        with self._connect() as db:
            if match:
                rows = db.execute(
                    "SELECT m.*, bm25(memories_fts) AS rank FROM memories_fts"
                    " JOIN memories m ON m.rowid = memories_fts.rowid"
                    f" WHERE memories_fts MATCH ? AND {clause} ORDER BY rank LIMIT ?",
                    [match, *params, limit * 4],
                ).fetchall()
                by_words = [_row(r, score=-r["rank"]) for r in rows
                            if shared_words(wanted, r["text"]) >= needed]  # fmt: skip
            by_meaning: list[Memory] = []
            if vector is not None and self.embed_model() == model:
                rows = db.execute(
                    f"SELECT * FROM memories m WHERE vector IS NOT NULL AND {clause}", params
                ).fetchall()
                scored = [_row(r, score=cosine(vector, unpack(r["vector"]))) for r in rows]
                by_meaning = sorted((m for m in scored if m.score >= threshold),
                                    key=lambda m: -m.score)[: limit * 4]  # fmt: skip
        if not by_meaning:
            return by_words[:limit]
        if not by_words:
            return by_meaning[:limit]
        return fuse(by_words, by_meaning)[:limit]


def fuse(*rankings: list[Memory], k: int = 60) -> list[Memory]:
    """Reciprocal rank fusion: a memory high in either ranking comes high in the result."""
    scores: dict[str, float] = {}
    found: dict[str, Memory] = {}
    for ranking in rankings:
        for place, memory in enumerate(ranking):
            scores[memory.id] = scores.get(memory.id, 0.0) + 1.0 / (k + place + 1)
            found.setdefault(memory.id, memory)
    ordered = sorted(found.values(), key=lambda m: -scores[m.id])
    for memory in ordered:
        memory.score = scores[memory.id]
    return ordered


def _row(row: sqlite3.Row | tuple[Any, ...], score: float = 0.0) -> Memory:
    data = dict(row) if isinstance(row, sqlite3.Row) else {}
    return Memory(
        id=data["id"], text=data["text"], kind=data["kind"], source=data["source"],
        tags=json.loads(data["tags"] or "[]"), created_at=data["created_at"], score=score,
    )  # fmt: skip
