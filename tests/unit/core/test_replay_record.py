"""What a replay reads of a saved chat (core/replay/record.py) and what counts as the same
result (core/replay/compare.py)."""

from __future__ import annotations

from core.chat_record import AgentRecord, ChatFile
from core.replay import compare, record
from tests.support.agents import answer, reply

CALL = reply("code_execution_tool", runtime="terminal", code="date")


def message(content: str, ai: bool = False, pinned: bool = False) -> dict:
    return {"ai": ai, "content": content, "tokens": 1, **({"pinned": True} if pinned else {})}


def chat(*agents: AgentRecord, items: list[dict] | None = None) -> ChatFile:
    return ChatFile(id="c1", name="Notes", created_at=1.0, agents=list(agents),
                    log={"items": items or []})  # fmt: skip


def history(*topics: list[dict], summary: str = "") -> dict:
    *sealed, current = topics
    return {"topics": [{"summary": summary, "messages": m} for m in sealed],
            "current": {"summary": "", "messages": current}}  # fmt: skip


def test_steps_are_replies_and_what_came_back_before_the_next_one():
    agent0 = AgentRecord(number=0, profile="default", history=history([
        message("Look", pinned=True), message(CALL, ai=True),
        message("[Result of tool `code_execution_tool`]\nMon"), message("[Warning]"),
        message(answer("Monday"), ai=True), message("Thanks", pinned=True),
    ]))  # fmt: skip
    task = [message("task", pinned=True), message(answer("x"), ai=True)]
    sub = AgentRecord(number=1, profile="default", superior=0, history=history(task))
    items = [{"type": "user", "heading": "User message", "content": "Look",
              "kvps": {"attachments": ["/a.png"]}},
             {"type": "user", "heading": "User intervention", "content": "faster"},
             {"type": "user", "heading": "User message", "content": "Thanks"}]  # fmt: skip
    got = record.read(chat(agent0, sub, items=items))
    first, second = got.steps["A0"]
    assert first.tool == "code_execution_tool" and first.reply == CALL
    assert first.result == "[Result of tool `code_execution_tool`]\nMon\n\n[Warning]"
    assert second.tool == "response" and second.after == ()  # the next message is a person's
    assert [s.reply for s in got.steps["A1"]] == [answer("x")]
    assert got.turns == [record.UserTurn("Look", ("/a.png",)), record.UserTurn("Thanks")]
    assert got.complete


def test_a_compressed_topic_leaves_the_record_incomplete():
    agent0 = AgentRecord(number=0, profile="default",
                         history=history([message(CALL, ai=True)], [message(answer("y"), ai=True)],
                                         summary="They asked for the date."))  # fmt: skip
    got = record.read(chat(agent0))
    assert not got.complete and [s.tool for s in got.steps["A0"]] == ["response"]


def test_the_same_result_sets_aside_chat_ids_and_line_end_spaces_only():
    old = "Saved as usr/chats/c1/messages/1.txt  \nok\n"
    assert compare.same(old, "Saved as usr/chats/c2/messages/1.txt\nok", ("c1", "c2"))
    assert not compare.same("12:00:01", "12:00:02", ("c1", "c2"))  # a clock moved: differs


def test_a_difference_is_said_in_plain_words():
    diff = compare.Difference("A1", 3, "code_execution_tool", "alpha", "beta")
    words = diff.words()
    assert words.startswith("At step 3 of A1, the tool code_execution_tool gave a different")
    assert "Recorded:\nalpha" in words and "This time:\nbeta" in words
    long = compare.Difference("A0", 1, "", "x" * 5000, "y").words()
    assert "… (cut)" in long and len(long) < 1500
    ran_out = compare.Difference("A0", 4, "", "", "", ran_out=True).words()
    assert "holds none there" in ran_out
