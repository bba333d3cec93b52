"""A running chat's steps do not wait for the disk; what reaches it is in order and complete."""

from __future__ import annotations

import threading

from core.agent_types import UserMessage
from initialize import ChatFactory
from store import persist_chat
from store.chats import ChatManager
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is


def test_steps_go_on_while_their_chats_write_is_held_up(llm, runtime, usr_dir, monkeypatch):
    llm.add_rule(model_is("util-model"), Reply("Held-up disk"))
    llm.script(Reply(reply("teleport", to="a")), Reply(reply("teleport", to="b")),
               Reply(answer("done")))  # fmt: skip
    chats = ChatManager(runtime, ChatFactory(runtime))
    context = chats.new_chat()
    # A disk that takes its time: every write of the chat waits for the gate, then
    # writes for real. What was written, in the order it was written, is kept.
    gate = threading.Event()
    written: list[tuple[bool, int]] = []
    real_write = persist_chat.write_chat

    def slow_disk(chat: persist_chat.ChatFile, path=None) -> str:
        gate.wait(60)
        problem = real_write(chat, path)
        written.append((chat.running, len(chat.log["items"])))
        return problem

    monkeypatch.setattr(persist_chat, "write_chat", slow_disk)
    run = context.communicate(UserMessage("go"))
    # All three model calls happen while the first write is still held up.
    wait_for(lambda: len(llm.chat_requests()) == 3, timeout=30,
             what="every step while the disk is held up")  # fmt: skip
    assert written == []
    gate.set()
    assert run.result(30) == "done"
    wait_for(lambda: written and not written[-1][0], timeout=30, what="the run's last save")
    # Never an older state after a newer one; the last one is the whole finished run.
    assert [items for _, items in written] == sorted(items for _, items in written)
    saved = persist_chat.read_chat(context.id)
    assert not saved.running
    # Everything up to the answer (naming the chat may log more, later).
    answered = next(i.no for i in context.log.items if i.type == "response")
    assert [i["id"] for i in saved.log["items"]][: answered + 1] == [
        i.id for i in context.log.items[: answered + 1]
    ]


def test_the_end_of_a_run_is_on_disk_when_its_save_returns(llm, runtime, usr_dir):
    llm.add_rule(model_is("util-model"), Reply("Quick"))
    llm.script(Reply(reply("teleport", to="a")), Reply(answer("done")))
    chats = ChatManager(runtime, ChatFactory(runtime))
    context = chats.new_chat()
    assert context.communicate(UserMessage("go")).result(30) == "done"
    final = context.runner.ended  # RunEnded announced: its subscribers (the save) are done
    wait_for(lambda: final is not None and final.done(), what="the run's last save")
    saved = persist_chat.read_chat(context.id)
    assert not saved.running
    assert any(i["type"] == "response" and i["content"] == "done" for i in saved.log["items"])
