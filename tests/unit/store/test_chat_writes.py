"""Chats written behind the agents: in order, the newest wins, nothing after a delete."""

from __future__ import annotations

import asyncio

import pytest

from core.chat_record import AgentRecord, ChatFile
from store import persist_chat
from store.chat_writes import ChatWrites


def named(chat_id: str, name: str) -> ChatFile:
    return ChatFile(id=chat_id, name=name, created_at=1.0,
                    agents=[AgentRecord(number=0, profile="agent0")])  # fmt: skip


async def test_snapshots_given_faster_than_the_disk_writes_end_with_the_newest_on_disk(usr_dir):
    writes = ChatWrites()
    # Given in one go (no await between): the first write has not started when the
    # second and third arrive, so they replace the one waiting.
    futures = [writes.submit(named("c1", f"v{n}")) for n in range(3)]
    assert await asyncio.gather(*futures) == ["", "", ""]  # each one's waiter hears of it
    assert persist_chat.read_chat("c1").name == "v2"
    assert persist_chat.read_header("c1").name == "v2"  # the summary describes that file
    assert writes.writing() == 0


async def test_a_snapshot_given_while_one_is_written_follows_it_never_precedes_it(usr_dir):
    writes = ChatWrites()
    first = writes.submit(named("c1", "first"))
    await asyncio.sleep(0)  # the first write is under way in its thread
    second = writes.submit(named("c1", "second"))
    await first
    await second
    assert persist_chat.read_chat("c1").name == "second"


async def test_chats_are_written_independently(usr_dir):
    writes = ChatWrites()
    await asyncio.gather(writes.submit(named("a", "A")), writes.submit(named("b", "B")))
    assert (persist_chat.read_chat("a").name, persist_chat.read_chat("b").name) == ("A", "B")


async def test_settle_drops_what_waits_so_a_deleted_chat_stays_deleted(usr_dir):
    writes = ChatWrites()
    waiting = writes.submit(named("gone", "never written"))
    await writes.settle("gone")  # before its write began
    assert await waiting == ""  # whoever waited is not left hanging
    assert not (usr_dir / "chats" / "gone").exists()
    assert writes.writing() == 0


async def test_settle_waits_for_a_write_under_way(usr_dir):
    writes = ChatWrites()
    first = writes.submit(named("c1", "first"))
    await asyncio.sleep(0)  # under way in its thread
    await writes.settle("c1")
    assert first.done() and persist_chat.read_chat("c1").name == "first"


async def test_a_write_that_fails_reaches_its_waiter_and_the_next_one_still_writes(usr_dir):
    writes = ChatWrites()
    chats = usr_dir / "chats"
    chats.mkdir()
    (chats / "blocked").write_text("a file where the chat's folder should be")
    with pytest.raises(OSError):
        await writes.submit(named("blocked", "x"))
    (chats / "blocked").unlink()
    assert await writes.submit(named("blocked", "y")) == ""
    assert persist_chat.read_chat("blocked").name == "y"


async def test_a_snapshot_is_written_where_usr_was_when_it_was_taken(
    usr_dir, tmp_path, monkeypatch
):
    """The folder is fixed when the snapshot is given, not when its thread gets to it: a
    write still waiting must not land in another `usr/` (a test's next one, in a suite)."""
    writes = ChatWrites()
    given = writes.submit(named("c1", "mine"))
    elsewhere = tmp_path / "other-usr"
    elsewhere.mkdir()
    monkeypatch.setenv("CADRE_USR_DIR", str(elsewhere))  # before the write has started
    await given
    assert not (elsewhere / "chats").exists()
    monkeypatch.setenv("CADRE_USR_DIR", str(usr_dir))
    assert persist_chat.read_chat("c1").name == "mine"
