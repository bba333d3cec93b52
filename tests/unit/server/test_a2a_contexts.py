"""The A2A contexts' map on disk (server/apis/a2a/contexts.py): per owner, bounded, kept
whole under a lock by two threads at once, and an unreadable file costs only the map."""

from __future__ import annotations

import logging
import threading

from server.apis.a2a.contexts import ContextMap


def test_a_context_is_its_owners_alone_and_the_oldest_go_past_the_bound(tmp_path):
    contexts = ContextMap(tmp_path / "contexts.json", kept=3)
    contexts.remember(None, "c1", "chat-1")
    contexts.remember("ann", "c1", "chat-2")
    assert contexts.chat_of(None, "c1") == "chat-1" and contexts.chat_of("ann", "c1") == "chat-2"
    assert contexts.chat_of("bob", "c1") is None
    assert contexts.chat_of("ann/c", "1") is None  # no owner and context run into another
    for n in (2, 3):
        contexts.remember(None, f"c{n}", f"chat-{n + 1}")
    assert contexts.chat_of(None, "c1") is None  # the least recently started went
    assert contexts.chat_of(None, "c3") == "chat-4"
    assert (tmp_path / "contexts.json").stat().st_mode & 0o777 == 0o600


def test_two_threads_at_once_both_are_kept(tmp_path):
    contexts = ContextMap(tmp_path / "contexts.json")
    start = threading.Barrier(8)

    def one(n: int) -> None:
        start.wait()
        for k in range(10):
            contexts.remember(None, f"t{n}-{k}", f"chat-{n}-{k}")

    threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(contexts.chat_of(None, f"t{n}-{k}") == f"chat-{n}-{k}"
               for n in range(8) for k in range(10))  # fmt: skip


def test_an_unreadable_map_is_empty_said_in_the_log_and_written_anew(tmp_path, caplog):
    path = tmp_path / "contexts.json"
    path.write_text("{not json")
    contexts = ContextMap(path)
    with caplog.at_level(logging.ERROR):
        assert contexts.chat_of(None, "c1") is None
    assert "A2A follow-ups start new chats" in caplog.text
    contexts.remember(None, "c1", "chat-1")
    assert contexts.chat_of(None, "c1") == "chat-1"


def test_a_deleted_accounts_contexts_go_to_its_heir_or_are_forgotten(tmp_path):
    contexts = ContextMap(tmp_path / "contexts.json")
    contexts.remember("bob", "ctx-1", "chat-b")
    contexts.remember("cat", "ctx-1", "chat-c")
    contexts.remember("ann", "ctx-2", "chat-a")
    contexts.hand_over("bob", "ann")
    contexts.hand_over("cat", None)
    assert contexts.chat_of("bob", "ctx-1") is None and contexts.chat_of("cat", "ctx-1") is None
    assert contexts.chat_of("ann", "ctx-1") == "chat-b"
    assert contexts.chat_of("ann", "ctx-2") == "chat-a"
