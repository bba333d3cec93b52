"""Answers the Telegram bot could not deliver (server/apis/telegram/pending.py): kept on
disk per Telegram chat, oldest first, bounded, found again by a new process, each let go
once delivered; a hand-edited entry that is none is passed over."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from server.apis.telegram.pending import PER_CHAT, Pending
from server.apis.telegram.watch import Ended


def test_answers_wait_per_chat_oldest_first_and_go_once_delivered(tmp_path):
    pending = Pending(tmp_path / "pending.json")
    pending.keep(7, "c1", Ended("First.", work_setting="work", space=Path("/s")))
    pending.keep(8, "c2", Ended(None, error="the model failed"))
    pending.keep(7, "c1", Ended("Second."))
    again = Pending(tmp_path / "pending.json")  # a restart
    kept = again.all()
    assert [(k.telegram_chat, k.ended.answer) for k in kept] == [
        (7, "First."), (8, None), (7, "Second.")]  # fmt: skip
    assert kept[0].ended.space == Path("/s") and kept[0].ended.work_setting == "work"
    assert kept[1].ended.error == "the model failed"
    assert again.has(7) and not again.has(9)
    again.delivered(kept[0])
    again.delivered(kept[1])
    assert [k.ended.answer for k in again.all()] == ["Second."] and not again.has(8)
    assert (tmp_path / "pending.json").stat().st_mode & 0o777 == 0o600


def test_past_the_bound_the_oldest_go_said_in_the_log(tmp_path, caplog):
    pending = Pending(tmp_path / "pending.json")
    with caplog.at_level(logging.WARNING):
        for n in range(PER_CHAT + 2):
            pending.keep(7, "c1", Ended(f"Answer {n}."))
    answers = [k.ended.answer for k in pending.all()]
    assert len(answers) == PER_CHAT and answers[0] == "Answer 2."
    assert "could not be delivered" in caplog.text


def test_an_entry_that_is_none_is_passed_over(tmp_path):
    path = tmp_path / "pending.json"
    path.write_text(json.dumps({"version": 1, "pending": {
        "7": [{"chat": "c1", "answer": "Fine.", "at": 1.0}, {"answer": 3}, "x"],
        "not a number": [{"chat": "c2", "answer": "Lost.", "at": 2.0}]}}))  # fmt: skip
    assert [k.ended.answer for k in Pending(path).all()] == ["Fine."]
