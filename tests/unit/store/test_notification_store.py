"""The notification history on its own: bounded, persisted, read after a restart, marks
read, clears, and survives a damaged file losing nothing beyond the damage."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

from store.notifications import MESSAGE_LIMIT, VERSION, Change, NotificationHistory


def reopened(history: NotificationHistory) -> NotificationHistory:
    """The history as the next start of Cadre reads it from disk."""
    history.close()
    return NotificationHistory(history.path, kept=history.kept)


def test_entries_are_kept_newest_first_and_bounded(usr_dir: Path):
    history = NotificationHistory(usr_dir / "notifications.json", kept=3)
    for n in range(5):
        history.add(f"title {n}", f"message {n}", chat_id=f"chat{n}")
    assert [i.title for i in history.items()] == ["title 4", "title 3", "title 2"]
    assert history.unread() == 3
    again = reopened(history)
    assert [(i.title, i.chat_id) for i in again.items()] == [
        ("title 4", "chat4"), ("title 3", "chat3"), ("title 2", "chat2")]  # fmt: skip


def test_an_entry_has_its_fields_and_a_bounded_message(usr_dir: Path):
    history = NotificationHistory(usr_dir / "notifications.json")
    item = history.add("Task ran", "x" * 10_000, kind="notify", type="success", chat_id="c1",
                       task="t1")  # fmt: skip
    odd = history.add("Odd", type="shouting")
    assert len(item.message) == MESSAGE_LIMIT and item.message.endswith("…")
    assert (item.kind, item.type, item.chat_id, item.task, item.read) == (
        "notify", "success", "c1", "t1", False)  # fmt: skip
    assert item.time > 0 and item.id and odd.type == "info"
    stored = reopened(history).items()
    assert stored[1] == item


def test_marks_read_and_clears_and_says_so(usr_dir: Path):
    history = NotificationHistory(usr_dir / "notifications.json")
    heard: list[Change] = []
    history.subscribe(heard.append)
    a, b, c = (history.add(name) for name in "abc")
    assert history.mark_read([a.id, "no-such-id"]) == [a.id]
    assert history.mark_read([a.id]) == []  # read already: no news
    assert history.unread() == 2
    assert [(ch.kind, ch.unread, ch.ids) for ch in heard[3:]] == [("read", 2, [a.id])]
    assert sorted(history.mark_read()) == sorted([b.id, c.id])
    assert history.unread() == 0 and all(i.read for i in reopened(history).items())
    history = reopened(history)
    history.subscribe(heard.append)
    history.clear()
    assert heard[-1].kind == "cleared" and heard[-1].unread == 0
    assert history.items() == [] and reopened(history).items() == []


def test_a_file_that_is_not_json_is_set_aside_with_a_clear_log(usr_dir: Path, caplog):
    path = usr_dir / "notifications.json"
    path.write_text('{"version": 1, "items": [{"id": "a"')  # cut short
    with caplog.at_level(logging.ERROR, logger="store.notifications"):
        history = NotificationHistory(path)
    assert history.items() == []
    aside = list(usr_dir.glob("notifications.damaged-*.json"))
    assert len(aside) == 1 and aside[0].read_text().startswith('{"version": 1')
    assert f"notification history {path} is damaged (not JSON" in caplog.text
    assert str(aside[0]) in caplog.text
    history.add("new")  # works on, and the set-aside file is never overwritten
    assert [i.title for i in reopened(history).items()] == ["new"]
    assert aside[0].read_text().startswith('{"version": 1')


def test_a_damaged_entry_costs_only_itself(usr_dir: Path, caplog):
    path = usr_dir / "notifications.json"
    good = {"id": "g1", "time": 1.0, "kind": "error", "type": "error", "title": "Run failed",
            "message": "boom", "chat_id": "c1", "task": None, "read": True}  # fmt: skip
    path.write_text(json.dumps({"version": VERSION, "items": [
        good, {"id": "b1", "kind": "not a kind"}, "not an entry",
        {**good, "id": "g2", "read": False}]}))  # fmt: skip
    with caplog.at_level(logging.ERROR, logger="store.notifications"):
        history = NotificationHistory(path)
    assert [(i.id, i.read) for i in history.items()] == [("g2", False), ("g1", True)]
    assert "2 damaged entries" in caplog.text and "keeping the 2 entries" in caplog.text
    history.flush()  # the good entries are written again at once, without the damage
    assert [i["id"] for i in json.loads(path.read_text())["items"]] == ["g1", "g2"]
    assert len(list(usr_dir.glob("notifications.damaged-*.json"))) == 1


def test_an_unknown_version_is_set_aside_untouched(usr_dir: Path):
    path = usr_dir / "notifications.json"
    path.write_text(json.dumps({"version": 99, "items": []}))
    assert NotificationHistory(path).items() == []
    assert not path.exists()
    (aside,) = usr_dir.glob("notifications.damaged-*.json")
    assert json.loads(aside.read_text())["version"] == 99


def test_many_threads_adding_at_once_keep_the_bound_and_the_file_in_step(usr_dir: Path):
    history = NotificationHistory(usr_dir / "notifications.json", kept=100)
    threads = [
        threading.Thread(target=lambda n=n: [history.add(f"{n}-{i}") for i in range(50)])
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(history.items()) == 100 and history.unread() == 100
    history.flush()
    stored = json.loads(history.path.read_text())["items"]
    assert [i["id"] for i in stored] == [i.id for i in reversed(history.items())]


def test_a_change_after_close_is_still_written(usr_dir: Path):
    history = NotificationHistory(usr_dir / "notifications.json")
    history.close()
    history.add("late")
    history.flush()
    assert [i.title for i in NotificationHistory(history.path).items()] == ["late"]
