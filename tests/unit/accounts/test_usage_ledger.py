"""The usage ledger (accounts/usage.py): each person's spending per UTC day, counted in
memory from many threads at once, written to usr/usage.json behind the counting and read
back after a restart; old days drop out, a damaged file is set aside."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

from accounts.usage import KEPT_DAYS, Spent, UsageLedger, day_of, next_midnight

NOON = datetime(2025, 3, 14, 12, 0, tzinfo=UTC).timestamp()
DAY = 86400.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_day_is_a_utc_day_and_ends_at_midnight_utc():
    assert day_of(NOON) == "2025-03-14"
    assert next_midnight(NOON) == datetime(2025, 3, 15, tzinfo=UTC).timestamp()


def test_spending_counts_per_user_per_day(tmp_path):
    clock = Clock(NOON)
    ledger = UsageLedger(tmp_path / "usage.json", clock)
    ledger.add("ann", Spent(100, 20, 1, 0.01))
    ledger.add("ann", Spent(50, 5, 1, 0.002))
    ledger.add("bea", Spent(7, 3, 1, 0.0))
    assert ledger.today("ann") == Spent(150, 25, 2, 0.012)
    assert ledger.today("bea").tokens == 10
    assert ledger.today("cid") == Spent()
    clock.now += DAY  # the next day starts from nothing, the last 30 keep both
    assert ledger.today("ann") == Spent()
    ledger.add("ann", Spent(1, 1, 1, 0.0))
    assert list(ledger.window("ann")) == ["2025-03-14", "2025-03-15"]
    assert ledger.users() == {"ann", "bea"}


def test_the_file_is_written_behind_and_read_back_after_a_restart(tmp_path):
    path = tmp_path / "usage.json"
    ledger = UsageLedger(path, Clock(NOON))
    ledger.add("ann", Spent(100, 20, 1, 0.5))
    ledger.close()  # the server stops: what is pending is written
    assert json.loads(path.read_text())["days"]["2025-03-14"]["ann"]["prompt_tokens"] == 100
    assert path.stat().st_mode & 0o777 == 0o600
    again = UsageLedger(path, Clock(NOON + 60))
    assert again.today("ann") == Spent(100, 20, 1, 0.5)


def test_days_past_the_kept_ones_drop_out_when_written(tmp_path):
    path = tmp_path / "usage.json"
    clock = Clock(NOON)
    ledger = UsageLedger(path, clock)
    ledger.add("ann", Spent(1, 0, 1, 0.0))
    clock.now += KEPT_DAYS * DAY
    ledger.add("ann", Spent(2, 0, 1, 0.0))
    ledger.flush()
    assert list(json.loads(path.read_text())["days"]) == [day_of(clock.now)]
    assert list(ledger.window("ann")) == [day_of(clock.now)]


def test_many_threads_counting_at_once_lose_nothing(tmp_path):
    ledger = UsageLedger(tmp_path / "usage.json", Clock(NOON))

    def count() -> None:
        for _ in range(500):
            ledger.add("ann", Spent(3, 1, 1, 0.001))

    threads = [threading.Thread(target=count) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ledger.close()
    assert ledger.today("ann").prompt_tokens == 8 * 500 * 3
    assert ledger.today("ann").calls == 4000
    reread = UsageLedger(tmp_path / "usage.json", Clock(NOON))
    assert reread.today("ann").completion_tokens == 4000


def test_a_damaged_file_is_set_aside_and_counting_starts_again(tmp_path, caplog):
    path = tmp_path / "usage.json"
    path.write_text("{not json")
    ledger = UsageLedger(path, Clock(NOON))
    assert ledger.today("ann") == Spent()
    assert not path.exists()
    assert (tmp_path / f"usage.damaged-{int(NOON)}.json").read_text() == "{not json"
    assert "damaged" in caplog.text
