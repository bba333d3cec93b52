"""Each person's notification history, with real accounts (usr/users.json) and real files:
whose an entry is, who hears of it, each bound kept apart, a leaving user's history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accounts.users import Users
from store.notification_owners import Notifications
from store.notifications import Change


@pytest.fixture
def heard() -> list[tuple[str | None, str]]:
    return []


def book(heard: list[tuple[str | None, str]], kept: int = 200) -> Notifications:
    notifications = Notifications(kept=kept)
    notifications.subscribe(lambda whose, change: heard.append((whose, _what(change))))
    return notifications


def _what(change: Change) -> str:
    return change.item.title if change.item is not None else change.kind


def stored(path: Path) -> list[str]:
    return [item["title"] for item in json.loads(path.read_text())["items"]]


def test_the_desktop_mode_keeps_one_history_heard_by_every_page(usr_dir, heard):
    notifications = book(heard)
    notifications.add(None, "Run finished", chat_id="c1")
    notifications.add("whoever", "Task ran", chat_id="c2")  # an owner left from accounts
    notifications.flush()
    assert stored(usr_dir / "notifications.json") == ["Run finished", "Task ran"]
    assert heard == [(None, "Run finished"), (None, "Task ran")]
    assert [i.title for i in notifications.items()] == ["Task ran", "Run finished"]


def test_each_person_has_a_history_of_their_own_in_their_space(usr_dir, heard):
    users = Users()
    users.add("root", "admin")  # the first admin: usr/ is their space
    users.add("ann", "member")
    users.add("bea", "member")
    notifications = book(heard, kept=3)
    for n in range(5):  # Ann's busy runs push out only her own oldest entries
        notifications.add("ann", f"Ann {n}", chat_id="a")
    notifications.add("bea", "Bea 0", chat_id="b")
    notifications.add("root", "Root 0", chat_id="r")
    notifications.flush()
    assert stored(usr_dir / "users" / "ann" / "notifications.json") == ["Ann 2", "Ann 3", "Ann 4"]
    assert stored(usr_dir / "users" / "bea" / "notifications.json") == ["Bea 0"]
    assert stored(usr_dir / "notifications.json") == ["Root 0"]
    assert [i.title for i in notifications.items("bea")] == ["Bea 0"]
    assert heard[-2:] == [("bea", "Bea 0"), ("root", "Root 0")]
    # Marking and clearing one's own is heard by one's own pages alone.
    notifications.of("bea").clear()
    assert heard[-1] == ("bea", "cleared") and len(notifications.items("ann")) == 3
    # usr/'s history, asked for as nobody's, is the first admin's: never every page's.
    notifications.of(None).mark_read()
    assert heard[-1] == ("root", "read")


def test_cadres_own_news_is_every_admins(usr_dir, heard):
    users = Users()
    users.add("root", "admin")
    users.add("ann", "member")
    users.add("second", "admin")
    made = book(heard).add(None, "Something of Cadre's")
    assert len(made) == 2
    assert sorted(heard) == [("root", "Something of Cadre's"), ("second", "Something of Cadre's")]


def test_a_leaving_users_history_is_closed_and_a_new_account_starts_afresh(usr_dir, heard):
    users = Users()
    users.add("root", "admin")
    users.add("ann", "member")
    notifications = book(heard)
    notifications.add("ann", "Before she left", chat_id="a")
    users.remove("ann")
    notifications.forget("ann")
    assert stored(usr_dir / "users" / "ann" / "notifications.json") == ["Before she left"]
    # A late run's end of hers is dropped: her folder goes next (moved or deleted).
    assert notifications.add("ann", "Too late", chat_id="a") == []
    (usr_dir / "users" / "ann" / "notifications.json").unlink()  # her folder went
    users.add("ann", "member")
    assert notifications.items("ann") == []
