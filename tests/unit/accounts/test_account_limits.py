"""The limits a person works under and the words that refuse them (accounts/limits.py):
their own where an admin set one, else the members' default; an admin only their own;
0 no limit; a day's limit says it resets at midnight UTC and in how long."""

from __future__ import annotations

from datetime import UTC, datetime

from accounts.limits import (
    MB,
    NONE,
    Limits,
    day_refusal,
    in_force,
    member_defaults,
    runs_refusal,
    upload_limit,
    upload_refusal,
)
from accounts.usage import Spent
from accounts.users import User
from helpers.settings import Settings

DEFAULTS = Limits(max_runs=2, tokens_per_day=1000, cost_per_day=0.5, upload_mb=10)
#: 21:30 UTC: two and a half hours before the day's limits reset.
EVENING = datetime(2025, 3, 14, 21, 30, tzinfo=UTC).timestamp()


def test_a_member_works_under_the_defaults_unless_their_own_are_set():
    plain = User("ann", "member")
    assert in_force(plain, DEFAULTS) == DEFAULTS
    own = User("bea", "member", max_runs=1, tokens_per_day=0)
    # Their own replaces the default; 0 is "no limit", not "the default".
    assert in_force(own, DEFAULTS) == Limits(max_runs=1, tokens_per_day=0, cost_per_day=0.5,
                                             upload_mb=10)  # fmt: skip


def test_an_admin_has_only_the_limits_set_on_them_and_the_desktop_none():
    assert in_force(User("root", "admin"), DEFAULTS) == NONE
    assert in_force(User("root", "admin", max_runs=3), DEFAULTS) == Limits(max_runs=3)
    assert in_force(None, DEFAULTS) == NONE


def test_the_members_defaults_come_from_the_settings():
    settings = Settings(member_max_runs=1, member_tokens_per_day=500, member_cost_per_day=0.25,
                        member_upload_mb=4)  # fmt: skip
    assert member_defaults(settings) == Limits(1, 500, 0.25, 4)
    assert member_defaults(Settings()) == NONE


def test_runs_at_once_refuse_at_the_limit_and_not_below():
    assert runs_refusal(Limits(max_runs=2), 1) == ""
    words = runs_refusal(Limits(max_runs=1), 1)
    assert words.startswith("You already have 1 chat working")
    assert "(1)" in words and "stop it" in words
    assert runs_refusal(NONE, 50) == ""


def test_tokens_per_day_refuse_once_reached_and_say_when_they_reset():
    limits = Limits(tokens_per_day=1000)
    assert day_refusal(limits, Spent(400, 599), EVENING) == ""
    words = day_refusal(limits, Spent(600, 400), EVENING)
    assert words.startswith("You have used 1,000 of the 1,000 tokens your account may use per")
    assert "resets at midnight UTC, in 2 h 30 min" in words


def test_cost_per_day_refuses_once_spent():
    limits = Limits(cost_per_day=0.02)
    assert day_refusal(limits, Spent(cost=0.0199), EVENING) == ""
    words = day_refusal(limits, Spent(cost=0.0213), EVENING)
    assert "spent 0.0213 of the 0.02 USD your account may spend per day" in words
    last_minute = datetime(2025, 3, 14, 23, 59, 30, tzinfo=UTC).timestamp()
    assert "in less than a minute" in day_refusal(limits, Spent(cost=1), last_minute)


def test_an_upload_is_held_to_the_lower_of_the_two_limits():
    assert upload_limit(Limits(upload_mb=2), 100 * MB) == 2 * MB
    assert upload_limit(Limits(upload_mb=200), 100 * MB) == 100 * MB
    assert upload_limit(NONE, 100 * MB) == 100 * MB
    assert upload_limit(Limits(upload_mb=2), 0) == 2 * MB
    assert upload_refusal(Limits(upload_mb=2), 2 * MB) == ""
    words = upload_refusal(Limits(upload_mb=2), 3 * MB)
    assert words.startswith("This upload is 3.0 MB; your account may upload at most 2 MB")
    assert upload_refusal(NONE, 10**9) == ""
