"""What a branch keeps of a chat's record at a log item (core/chat_cut.py), on records made
by hand: each history message placed in the log by its `at`."""

from __future__ import annotations

from typing import Any

import pytest

from core.chat_cut import OLD_CHAT, SUMMARISED, cut_history, cut_record
from core.chat_record import AgentRecord, ChatFile
from core.prompt.history import Bulk, History, Message, Topic
from helpers.errors import UserError


def item(no: int, kind: str, content: str = "", agentno: int = 0, heading: str = "",
         agent: str = "") -> dict[str, Any]:  # fmt: skip
    return {"no": no, "type": kind, "content": content, "agentno": agentno,
            "heading": heading, "agent": agent, "kvps": {}, "version": no + 1}  # fmt: skip


def said(text: str, at: int, ai: bool = False, pinned: bool = False) -> Message:
    return Message(ai=ai, content=text, at=at, pinned=pinned)


def history(*topics: list[Message]) -> dict[str, Any]:
    *sealed, current = [Topic(messages=list(t)) for t in topics]
    return History(topics=sealed, current=current).to_dict()


def chat(agents: list[AgentRecord], items: list[dict[str, Any]]) -> ChatFile:
    return ChatFile(id="c1", created_at=1.0, agents=agents, log={"items": items, "version": 9})


def texts(record: AgentRecord) -> list[str]:
    restored = History.from_dict(record.history)
    return [m.content for t in (*restored.topics, restored.current) for m in t.messages]


def test_a_topic_is_cut_inside_and_later_ones_go():
    kept = cut_history(History.from_dict(history(
        [said("q1", 1, pinned=True), said("a1", 2, ai=True)],
        [said("q2", 3, pinned=True), said("call", 4, ai=True), said("result", 6)],
    )), keep=5)  # fmt: skip
    assert [m.content for m in kept.topics[0].messages] == ["q1", "a1"]
    assert [m.content for m in kept.current.messages] == ["q2", "call"]


def test_a_summary_that_reaches_past_the_point_is_refused():
    summarised = History(topics=[Topic([said("q1", 1), said("a1", 5, ai=True)], summary="s")])
    with pytest.raises(UserError, match=SUMMARISED):
        cut_history(summarised, keep=3)
    bulked = History(bulks=[Bulk("old")], current=Topic([said("q9", 9)]))
    with pytest.raises(UserError, match=SUMMARISED):
        cut_history(bulked, keep=3)
    assert cut_history(bulked, keep=9).bulks[0].summary == "old"  # before the point: kept


def test_siblings_made_later_go_and_the_one_they_replaced_works_again():
    items = [item(0, "user", "q", heading="User message"), item(1, "subagent"),
             item(2, "agent", agentno=1), item(3, "subagent"), item(4, "agent", agentno=1,
                                                                    agent="A1.1")]  # fmt: skip
    agents = [
        AgentRecord(number=0, profile="p", history=history([said("q", 1, pinned=True)])),
        AgentRecord(number=1, profile="p", superior=0, retired=True,
                    history=history([said("task", 2), said("step", 3, ai=True)])),
        AgentRecord(number=1, name="A1.1", profile="p", superior=0,
                    history=history([said("t1", 4)])),
        AgentRecord(number=1, name="A1.2", profile="p", superior=0,
                    history=history([said("t2", 4)])),
    ]  # fmt: skip
    cut = cut_record(chat(agents, items), 2)
    kept = [(a.name or f"A{a.number}", a.retired) for a in cut.agents]
    assert kept == [("A0", False), ("A1", False)]
    assert texts(cut.agents[1]) == ["task", "step"]  # its step's reply came before item 3
    # The run went on after item 2 (A1's step): the branch resumes A1, under Agent 0.
    assert cut.running and cut.working_agent == 1 and cut.busy == [0, 1]
    assert len(cut.log["items"]) == 3

    # A chat running now, at its latest item, inside the batch: each sibling resumes.
    later = cut_record(chat(agents, items).model_copy(update={"running": True}), 4)
    assert [a.name for a in later.agents] == ["", "", "A1.1", "A1.2"]
    assert later.working_agent == 1 and later.busy == [0, 2, 3]


def test_a_chat_without_notes_is_cut_only_before_a_message_of_the_user_s():
    items = [item(0, "user", "q1", heading="User message"), item(1, "response", "a1"),
             item(2, "user", "q2", heading="User message"), item(3, "response", "a2")]  # fmt: skip
    agents = [AgentRecord(number=0, profile="p", history=history(
        [said("q1", -1, pinned=True), said("a1", -1, ai=True)],
        [said("q2", -1, pinned=True), said("a2", -1, ai=True)]))]  # fmt: skip
    cut = cut_record(chat(agents, items), 1)
    assert texts(cut.agents[0]) == ["q1", "a1"] and not cut.running
    edited = cut_record(chat(agents, items), 2, before=True)
    assert texts(edited.agents[0]) == ["q1", "a1"]
    with pytest.raises(UserError, match=OLD_CHAT):
        cut_record(chat(agents, items), 0)
    assert texts(cut_record(chat(agents, items), 3).agents[0]) == ["q1", "a1", "q2", "a2"]
    agents.append(AgentRecord(number=1, profile="p", superior=0,
                              history=history([said("task", -1)])))  # fmt: skip
    assert len(cut_record(chat(agents, items), 3).agents) == 2  # at its end: all of it


def test_an_item_the_chat_does_not_have_is_said():
    agents = [AgentRecord(number=0, profile="p")]
    with pytest.raises(UserError, match=r"no item 7 .*0 to 0"):
        cut_record(chat(agents, [item(0, "user", "q", heading="User message")]), 7)
    with pytest.raises(UserError, match="only those can be edited"):
        cut_record(chat(agents, [item(0, "info")]), 0, before=True)
