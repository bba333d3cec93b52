"""When a task is due: cron read in its time zone, planned times, and clear errors."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from helpers.errors import UserError
from scheduler import timing
from scheduler.tasks import TaskSpec, next_run, validated


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_cron_is_read_in_its_time_zone_across_a_dst_change():
    paris = timing.zone("Europe/Paris")
    # 09:00 in Paris is 08:00 UTC in winter and 07:00 UTC in summer (DST began 2026-03-29).
    assert timing.next_cron("0 9 * * *", paris, at("2026-03-27T12:00+00:00")) == at(
        "2026-03-28T08:00+00:00"
    )
    assert timing.next_cron("0 9 * * *", paris, at("2026-03-28T12:00+00:00")) == at(
        "2026-03-29T07:00+00:00"
    )


def test_next_run_is_strictly_after_the_given_time():
    spec = TaskSpec(name="n", prompt="p", kind="scheduled", cron="*/15 * * * *", timezone="UTC")
    assert next_run(spec, at("2026-01-01T10:15:00+00:00")) == at("2026-01-01T10:30+00:00")
    assert next_run(spec, at("2026-01-01T10:14:59+00:00")) == at("2026-01-01T10:15+00:00")
    assert next_run(spec.model_copy(update={"enabled": False}), at("2026-01-01T10:00Z")) is None


def test_planned_times_without_offset_are_read_in_the_task_zone():
    spec = validated(TaskSpec(name="n", prompt="p", kind="planned", timezone="America/New_York",
                              at=["2026-07-01T09:00", "2026-06-01T09:00+02:00"]))  # fmt: skip
    assert spec.at == ["2026-06-01T07:00:00+00:00", "2026-07-01T13:00:00+00:00"]
    assert next_run(spec, at("2026-06-01T07:00Z")) == at("2026-07-01T13:00Z")
    assert next_run(spec, at("2026-07-01T13:00Z")) is None
    assert next_run(spec.model_copy(update={"kind": "adhoc", "at": []}), at("2026-01-01")) is None


@pytest.mark.parametrize(
    ("cron", "words"),
    [
        ("* * * *", "has 4 field(s); a cron expression has five"),
        ("0 0 * * * *", "has 6 field(s)"),
        ("61 * * * *", "is not a valid cron expression"),
        ("every day", "has 2 field(s)"),
    ],
)
def test_a_bad_cron_is_a_clear_error(cron, words):
    with pytest.raises(UserError, match="minute hour") as caught:
        validated(TaskSpec(name="n", prompt="p", kind="scheduled", cron=cron))
    assert words in str(caught.value) and repr(cron) in str(caught.value)


@pytest.mark.parametrize("name", ["Mars/Olympus", "../etc/passwd", "UTC+2"])
def test_a_bad_time_zone_is_a_clear_error(name):
    with pytest.raises(UserError, match=r"unknown time zone .* IANA name") as caught:
        validated(TaskSpec(name="n", prompt="p", kind="scheduled", cron="* * * * *",
                           timezone=name))  # fmt: skip
    assert repr(name) in str(caught.value)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"kind": "scheduled"}, "cron: a scheduled task needs a cron expression"),
        ({"kind": "planned"}, "at: a planned task needs at least one date-time"),
        ({"kind": "planned", "at": ["next tuesday"]}, "is not an ISO date-time"),
        ({"kind": "adhoc", "cron": "* * * * *"}, "cron: only a scheduled task has one"),
        ({"kind": "adhoc", "profile": "ghost"}, "no available agent profile 'ghost'"),
        ({"kind": "adhoc", "project": "nowhere"}, "there is no project 'nowhere'"),
        ({"kind": "adhoc", "name": "   "}, "name: a task needs a name"),
    ],
)
def test_a_task_that_does_not_hold_together_is_refused(fields, words):
    with pytest.raises(UserError, match=words):
        validated(TaskSpec(**{"name": "n", "prompt": "p", **fields}))


def test_the_default_zone_is_the_servers_own():
    assert timing.zone("").utcoffset(datetime.now()) == datetime.now(UTC).astimezone().utcoffset()


@pytest.fixture
def server_in_paris(monkeypatch):
    """The server's own time zone is Paris (TZ, as a systemd unit or a shell sets it)."""
    import time

    monkeypatch.setenv("TZ", "Europe/Paris")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_the_servers_own_zone_keeps_its_summer_and_winter_time(server_in_paris):
    """A task with no time zone is read in the server's zone with its daylight-saving
    rules, not in the offset it has today: 09:00 in July is 07:00 UTC, in January 08:00."""
    spec = validated(TaskSpec(name="n", prompt="p", kind="planned",
                              at=["2027-01-15T09:00", "2027-07-15T09:00"]))  # fmt: skip
    assert spec.at == ["2027-01-15T08:00:00+00:00", "2027-07-15T07:00:00+00:00"]
    here = timing.zone("")
    assert timing.next_cron("0 9 * * *", here, at("2027-03-27T12:00+00:00")) == at(
        "2027-03-28T07:00+00:00"  # the first day of summer time in 2027
    )
