"""History compression: budgets, protected messages, appends while it awaits a summary."""

from __future__ import annotations

import asyncio

from core.prompt.compression import Compressor, WindowShare, fit, protected
from core.prompt.history import History


def note(tokens: int, file: str) -> str:
    return f"[cut {tokens}{' see ' + file if file else ''}]"


def filled(topics: int, words: int = 300) -> History:
    history = History()
    for n in range(topics):
        history.add_message(False, f"question {n} " + "word " * words, pinned=True)
        history.add_message(True, f"answer {n} " + "word " * words)
        history.new_topic()
    return history


async def summarize(text: str) -> str:
    return "SUMMARY of " + text.split()[1] + " with" + " detail" * 50


def test_old_topics_become_summaries_then_bulks():
    history = filled(30)
    history.add_message(False, "the latest question", pinned=True)
    history.add_message(True, "working on it")
    history.add_message(False, "the last tool result")
    before = history.tokens
    asyncio.run(Compressor(history, WindowShare(limit=3000), summarize, note).run())
    assert history.tokens < 3000 * 0.75 < before
    # Summaries of summaries: the oldest topics ended in a bulk, the rest are summarised.
    assert history.bulks and all(b.summary.startswith("SUMMARY") for b in history.bulks)
    assert all(t.summary.startswith("SUMMARY") for t in history.topics)
    texts = [m.content for m in history.current.messages]
    assert texts == ["the latest question", "working on it", "the last tool result"]


def test_a_huge_message_keeps_its_head_and_tail_and_names_its_file():
    history = History()
    history.add_message(False, "task", pinned=True)
    big = history.add_message(True, "HEAD " + "x" * 200_000 + " TAIL", file="messages/3.txt")
    history.add_message(False, "last result")
    fit(history, 2000, note)
    assert history.tokens <= 2000
    assert big.content.startswith("HEAD") and big.content.endswith("TAIL")
    assert "see messages/3.txt" in big.content
    assert [m.content for m in history.current.messages][::2] == ["task", "last result"]


def test_the_latest_user_message_and_last_result_are_protected():
    history = History()
    history.add_message(False, "first request", pinned=True)
    history.add_message(True, "step")
    history.add_message(False, "old result")
    history.add_message(False, "intervention", pinned=True)
    history.add_message(True, "step 2")
    history.add_message(False, "newest result")
    kept = {m.content for m in history.current.messages if id(m) in protected(history)}
    assert kept == {"intervention", "newest result"}


def test_the_current_topic_is_summarised_but_not_its_ends():
    history = History()
    history.add_message(False, "do the big task", pinned=True)
    for n in range(40):
        history.add_message(True, f"step {n} " + "word " * 100)
        history.add_message(False, f"result {n} " + "word " * 100)
    asyncio.run(Compressor(history, WindowShare(limit=6000), summarize, note).run())
    texts = [m.content for m in history.current.messages]
    assert texts[0] == "do the big task" and texts[-1].startswith("result 39")
    assert any(t.startswith("SUMMARY") for t in texts) and len(texts) < 81


def test_appends_while_summarising_are_neither_lost_nor_reordered():
    history = filled(20)
    history.add_message(False, "current question", pinned=True)
    release = asyncio.Event()

    async def slow_summary(text: str) -> str:
        await release.wait()
        return "SUMMARY"

    async def scenario() -> list[str]:
        task = asyncio.ensure_future(
            Compressor(history, WindowShare(limit=2500), slow_summary, note).run()
        )
        await asyncio.sleep(0)  # compression is now waiting for its first summary
        added = []
        for n in range(5):
            added.append(history.add_message(n % 2 == 0, f"appended {n}").content)
        history.new_topic()  # the loop seals a topic meanwhile, too
        history.add_message(False, "next question", pinned=True)
        release.set()
        await task
        return added

    added = asyncio.run(scenario())
    sealed = [m.content for t in history.topics for m in t.messages]
    everything = sealed + [m.content for m in history.current.messages]
    assert [t for t in everything if t.startswith("appended")] == added
    assert history.topics[-1].messages[0].content == "current question"
    assert history.current.messages[-1].content == "next question"


def test_a_small_window_keeps_room_for_the_reply():
    from core.prompt.context_window import prompt_room

    assert prompt_room(4_096) == 3_072  # a quarter, for a small model's whole reply
    assert prompt_room(8_192) == 7_168  # 1,024 tokens
    assert prompt_room(128_000) == 121_600  # 5%
