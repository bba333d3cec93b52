"""The memory store: round trips, keyword and vector search, re-index on a model change,
concurrent writers, and a damaged database rebuilt from its export."""

from __future__ import annotations

import multiprocessing
import threading

from memory.store import Filter, MemoryStore, cosine, fuse


def test_save_search_filter_and_delete(tmp_path):
    store = MemoryStore(tmp_path / "memory.db")
    tabs = store.save("The user prefers tabs in Python code", "main", "chat a", ["style"])
    store.save("Deploy with docker compose up -d", "solutions", "chat b", ["deploy"])
    store.save("The user's dog is called Rex", "main")
    assert [m.id for m in store.search("python tabs")] == [tabs.id]
    assert store.search("docker", where=Filter(kind="main")) == []
    assert [m.text for m in store.search("user", where=Filter(tag="style"))] == [tabs.text]
    assert store.search('"; DROP TABLE memories; --') == []  # words, never FTS syntax
    assert store.delete([tabs.id]) == 1 and store.get(tabs.id) is None
    assert store.count() == 2


def test_vectors_rank_by_meaning_and_fuse_with_keywords(tmp_path):
    store = MemoryStore(tmp_path / "memory.db")
    a = store.save("alpha", vector=[1.0, 0.0, 0.0], model="m1")
    b = store.save("beta words", vector=[0.0, 1.0, 0.0], model="m1")
    found = store.search("unrelated", vector=[0.9, 0.1, 0.0], model="m1", threshold=0.5)
    assert [m.id for m in found] == [a.id] and found[0].score > 0.9
    mixed = store.search("beta", vector=[1.0, 0.0, 0.0], model="m1")
    assert {m.id for m in mixed} == {a.id, b.id}  # one by meaning, one by keyword
    assert store.search("x", vector=[1.0, 0.0, 0.0], model="other") == []  # never mixes models
    assert cosine([1, 0], [0, 1]) == 0.0 and fuse([a], [a])[0].id == a.id


def test_a_new_embedding_model_means_a_reindex(tmp_path):
    store = MemoryStore(tmp_path / "memory.db")
    store.save("one", vector=[1.0, 0.0], model="m1")
    store.save("two")  # saved while no embedding model worked
    assert [m.text for m in store.needs_reindex("m1")] == ["two"]
    assert {m.text for m in store.needs_reindex("m2")} == {"one", "two"}
    store.set_vectors({m.id: [0.5, 0.5] for m in store.needs_reindex("m2")}, "m2")
    assert store.needs_reindex("m2") == [] and store.embed_model() == "m2"


def _writer(path: str, n: int) -> None:
    store = MemoryStore(__import__("pathlib").Path(path))
    for i in range(25):
        store.save(f"process {n} memory {i}")


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "memory.db"
    store = MemoryStore(path)

    def write(n: int) -> None:
        for i in range(25):
            store.save(f"thread {n} item {i}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    processes = [multiprocessing.get_context("spawn").Process(target=_writer, args=(str(path), n))
                 for n in range(2)]  # fmt: skip
    for worker in [*threads, *processes]:
        worker.start()
    for worker in [*threads, *processes]:
        worker.join(60)
    assert store.count() == 150
    assert len(store.search("process memory", limit=100)) == 50


def test_a_damaged_database_is_rebuilt_from_its_export(tmp_path):
    path = tmp_path / "memory.db"
    store = MemoryStore(path)
    kept = store.save("remember the milk", tags=["shopping"])
    dropped = store.save("an old note")
    store.delete([dropped.id])
    path.write_bytes(b"this is not a database" * 100)
    for extra in ("-wal", "-shm"):
        (tmp_path / f"memory.db{extra}").unlink(missing_ok=True)
    again = MemoryStore(path)
    assert [m.id for m in again.all()] == [kept.id] and again.get(kept.id).tags == ["shopping"]
    assert list(tmp_path.glob("memory.damaged-*.db"))  # set aside, not lost


def test_an_edited_memory_is_searched_by_its_new_text_even_after_a_rebuild(tmp_path):
    path = tmp_path / "memory.db"
    store = MemoryStore(path)
    item = store.save("apples are red")
    store.update_text(item.id, "pears are green")
    path.write_bytes(b"garbage" * 100)
    again = MemoryStore(path)
    assert again.search("apples") == [] and [m.id for m in again.search("pears")] == [item.id]
    with again._connect() as db:  # the keyword index agrees with the rows
        db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
    mail = again.save("send the weekly e-mail")
    assert [m.id for m in again.search("e-mail", every_word=True)] == [mail.id]  # split alike


def test_switching_models_drops_the_old_vectors(tmp_path):
    store = MemoryStore(tmp_path / "memory.db")
    store.save("one", vector=[1.0, 0.0], model="m1")
    store.switch_model("m2")
    assert store.embed_model() == "m2" and [m.text for m in store.needs_reindex("m2")] == ["one"]
    assert store.search("x", vector=[1.0, 0.0], model="m2") == []  # no m1 vector left to match


def test_many_saved_at_once_are_searchable_and_survive_a_rebuild(tmp_path):
    path = tmp_path / "memory.db"
    store = MemoryStore(path)
    saved = store.save_many(["alpha chunk", "beta chunk", "gamma chunk"], "knowledge", "k/a.md")
    assert [m.source for m in saved] == ["k/a.md"] * 3 and store.count() == 3
    assert [m.id for m in store.search("beta")] == [saved[1].id]
    assert len(store.export.read_text().splitlines()) == 3  # one write for all three
    path.write_bytes(b"this is not a database" * 100)
    for extra in ("-wal", "-shm"):
        (tmp_path / f"memory.db{extra}").unlink(missing_ok=True)
    assert sorted(m.text for m in MemoryStore(path).all()) == ["alpha chunk", "beta chunk",
                                                               "gamma chunk"]  # fmt: skip


def test_stopwords_find_nothing_and_plural_forms_match(tmp_path):
    from memory.store import MemoryStore, fts_query

    store = MemoryStore(tmp_path / "memory.db")
    store.save("The user's favourite colours are teal and red")
    store.save("The result of 17 * 23 is 391")
    assert fts_query("what is the") == ""
    assert store.search("what is the") == []
    assert [m.text for m in store.search("my favourite colour")] == [
        "The user's favourite colours are teal and red"
    ]
    # A relevance threshold: two shared key words (or all the query has).
    assert store.search("list the result files", min_words=2) == []
    assert len(store.search("the result of 17 * 23", min_words=2)) == 1
