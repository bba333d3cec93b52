"""Chats on disk: saving and loading a long chat; start-up with many saved chats."""

from __future__ import annotations

import shutil
import time

from bench.harness import Row, stopwatch, timed
from core.chat_record import AgentRecord, ChatFile
from core.log import Log
from core.prompt.history import History, Message
from helpers import folders
from helpers.runtime import AgentRuntime
from initialize import ChatFactory
from store import persist_chat
from store.chats import ChatManager


def make_chat(chat_id: str, messages: int) -> ChatFile:
    """A chat of `messages` messages (user, reply, tool result...) and a log item each."""
    history = History()
    log = Log()
    for n in range(messages):
        if n % 20 == 0:
            history.new_topic()
        text = f"message {n}: " + "some realistic text of a step in the work. " * 6
        history.current.messages.append(Message(ai=n % 2 == 1, content=text, tokens=len(text) // 4))
        log.log("agent" if n % 2 else "user", f"step {n}", text)
    return ChatFile(
        id=chat_id,
        name=f"chat {chat_id}",
        created_at=time.time(),
        agents=[AgentRecord(number=0, profile="agent0", history=history.to_dict())],
        log={"guid": log.guid, "version": log.version, "items": log.to_list()},
    )


def run(quick: bool) -> list[Row]:
    rows = []
    size = 2_000 if quick else 10_000
    big = make_chat("big", size)
    save = timed(lambda: persist_chat.write_chat(big), repeat=3)
    load = timed(lambda: persist_chat.read_chat("big"), repeat=3)
    megabytes = folders.chat_file("big").stat().st_size / 1e6
    rows += [
        Row(f"save a {size:,}-message chat ({megabytes:.1f} MB)", save * 1000, "ms"),
        Row(f"load a {size:,}-message chat", load * 1000, "ms"),
    ]
    persist_chat.delete_chat_files("big")

    count = 200 if quick else 1_000
    for messages in (20, 200):
        for n in range(count):
            persist_chat.write_chat(make_chat(f"c{n:05d}", messages))
        runtime = AgentRuntime().start()
        try:
            manager = ChatManager(runtime, ChatFactory(runtime))
            with stopwatch() as elapsed:
                manager.load_saved()
            assert len(manager) == count
        finally:
            runtime.stop()
        name = f"start-up: chat list of {count:,} saved chats ({messages} messages each) ready"
        rows.append(Row(name, elapsed[0], "s", 2.0))
        shutil.rmtree(folders.chats_dir())
    return rows
