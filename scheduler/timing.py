"""When a task is due: cron expressions (croniter), planned date-times, time zones (zoneinfo).

croniter is the cron parser most Python schedulers use, kept up to date and aware of
time zones and daylight-saving changes, so none of that is written again here.
Only standard five-field expressions are taken (minute hour day month weekday):
croniter's optional seconds and years fields would make a task due every second.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

from helpers.errors import UserError

#: The fields of a cron expression, in order, for error messages.
CRON_FIELDS = "minute hour day-of-month month day-of-week"


def check_cron(expression: str) -> str:
    """`expression` tidied (single spaces); UserError saying what is wrong when it is not a
    standard five-field cron expression croniter can read."""
    fields = expression.split()
    if len(fields) != 5:
        raise UserError(
            f"cron {expression!r} has {len(fields)} field(s); a cron expression has five: "
            f"{CRON_FIELDS} (e.g. '0 9 * * 1-5' for 9:00 on weekdays)"
        )
    tidy = " ".join(fields)
    if not croniter.is_valid(tidy):
        raise UserError(
            f"cron {expression!r} is not a valid cron expression ({CRON_FIELDS}; "
            "e.g. '*/15 * * * *' for every 15 minutes)"
        )
    return tidy


def zone(name: str) -> tzinfo:
    """The time zone named `name` (IANA, e.g. 'Europe/Paris'); the server's local zone when
    empty; UserError for a name no time zone has."""
    if not name.strip():
        local = datetime.now().astimezone().tzinfo
        assert local is not None  # astimezone() always gives an aware time
        return local
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise UserError(
            f"unknown time zone {name!r}: use an IANA name such as 'Europe/Paris', "
            "'America/New_York' or 'UTC'"
        ) from None


def parse_at(values: Iterable[str], where: tzinfo) -> list[datetime]:
    """Planned date-times (ISO 8601) as aware UTC times, sorted, duplicates dropped; a time
    without an offset is read in `where`. UserError naming the first one that is not ISO."""
    found: set[datetime] = set()
    for raw in values:
        try:
            moment = datetime.fromisoformat(str(raw).strip())
        except ValueError:
            raise UserError(
                f"planned time {raw!r} is not an ISO date-time; write it like 2026-12-01T09:00"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=where)
        try:
            found.add(moment.astimezone(UTC))
        except OverflowError:  # year 1 or 9999 moved past what a date holds
            raise UserError(
                f"planned time {raw!r} is out of range once read in UTC; give a nearer date"
            ) from None
    return sorted(found)


def next_cron(expression: str, where: tzinfo, after: datetime) -> datetime | None:
    """The first time strictly after `after` that `expression` names, read in `where`
    (UTC); None when it names none (a valid expression may never come: `0 0 31 2 *`)."""
    try:
        following: datetime = croniter(expression, after.astimezone(where)).get_next(datetime)
    except CroniterBadDateError:
        return None
    return following.astimezone(UTC)


def next_planned(times: Iterable[datetime], after: datetime) -> datetime | None:
    """The first of `times` strictly after `after`; None when all have passed."""
    return min((t for t in times if t > after), default=None)
