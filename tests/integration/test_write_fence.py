"""The chat store never writes a chat its node may no longer write (store/placement.py
`may_write`): in a cluster, once another node took the chat over while this one stalled,
this node's saves go nowhere, whatever its run still does; a process alone (no placement)
saves as always."""

from __future__ import annotations

import json

from core.agent_types import UserMessage
from initialize import ChatFactory
from store.chats import ChatManager
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply, model_is


class Fence:
    """A placement whose node holds every chat until `lost` is set (the takeover)."""

    def __init__(self) -> None:
        self.lost = False
        self.asked: list[str] = []

    def holds(self, chat_id: str) -> bool:
        return True

    def may_write(self, chat_id: str) -> bool:
        self.asked.append(chat_id)
        return not self.lost

    def check(self, chat_id: str) -> None:
        return None


def test_a_chat_taken_over_elsewhere_is_not_written_here_any_more(llm, runtime, usr_dir):
    llm.add_rule(model_is("util-model"), Reply("Named"))
    chats = ChatManager(runtime, ChatFactory(runtime))
    fence = Fence()
    chats.placement = fence
    context = chats.new_chat()
    path = usr_dir / "chats" / context.id / "chat.json"
    llm.script(Reply(answer("Written here.")))
    assert context.communicate(UserMessage("first")).result(30) == "Written here."
    # Its name comes from the utility model after the run, and is saved: that first.
    wait_for(lambda: "Named" in path.read_text(), what="the chat's name on disk")
    chats.save_now(context)
    assert "Written here." in path.read_text()
    assert fence.asked and set(fence.asked) == {context.id}
    before = path.read_bytes()
    fence.lost = True  # another node took the chat over: the file is theirs from now on
    llm.script(Reply(answer("Never on disk.")))
    assert context.communicate(UserMessage("second")).result(30) == "Never on disk."
    chats.save_now(context)
    assert path.read_bytes() == before
    assert [m["content"] for m in json.loads(before)["log"]["items"] if m["type"] == "user"
            ] == ["first"]  # fmt: skip


def test_a_chat_made_elsewhere_is_found_by_the_node_that_just_took_its_lease(runtime, usr_dir):
    """The lease watch takes a dead node's lease before it reads the chat: a request meeting
    the chat in between (relayed there, as the node holds it) finds it, never "no chat"."""
    elsewhere = ChatManager(runtime, ChatFactory(runtime))
    made = elsewhere.new_chat()
    elsewhere.save_now(made)
    here = ChatManager(runtime, ChatFactory(runtime))
    here.placement = Fence()  # holds every chat: the lease is this node's already
    assert here.get(made.id).id == made.id
