"""The Telegram bridge: settings changed without a restart never leave two
pollers; a stop ends the bridge's thread promptly and cleanly."""

from __future__ import annotations

import threading
import time
import warnings
from types import SimpleNamespace

import pytest

from server.apis.telegram import bridge as bridge_module
from server.apis.telegram.config import BotConfig
from tests.support.fake_telegram import FakeTelegram


class CountingTelegram(FakeTelegram):
    """Counts, on the bridge's side, how many pollers run at once."""

    lock = threading.Lock()
    now = 0
    most = 0


def _counting_run(original):
    async def run(self):
        with CountingTelegram.lock:
            CountingTelegram.now += 1
            CountingTelegram.most = max(CountingTelegram.most, CountingTelegram.now)
        try:
            return await original(self)
        finally:
            with CountingTelegram.lock:
                CountingTelegram.now -= 1

    return run


@pytest.fixture
def fakes():
    made = [CountingTelegram(token=f"{n}00:TOKEN-{n}-abcdefghijkl").start() for n in range(3)]
    yield made
    for fake in made:
        fake.stop()


def test_switching_bots_quickly_never_leaves_two_pollers(fakes, monkeypatch, tmp_path):
    current = {
        "config": BotConfig(token=fakes[0].token, allowed=frozenset({1}), api_base=fakes[0].url)
    }
    from server.apis.telegram import poller

    monkeypatch.setattr(poller.Poller, "run", _counting_run(poller.Poller.run))
    monkeypatch.setattr(bridge_module, "_read_config", lambda: current["config"])
    monkeypatch.setattr(bridge_module, "ChatMap", lambda lock=None: SimpleNamespace())
    bridge = bridge_module.TelegramBridge(SimpleNamespace(registry={}))
    bridge.start()
    try:
        deadline = time.monotonic() + 10
        while fakes[0].state.polls == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        for round_ in range(12):
            fake = fakes[round_ % 3]
            current["config"] = BotConfig(
                token=fake.token, allowed=frozenset({1}), api_base=fake.url
            )
            bridge.settings_changed()
            time.sleep(0.15)
        time.sleep(2)
        assert CountingTelegram.most == 1, CountingTelegram.most
    finally:
        with warnings.catch_warnings(record=True):
            started = time.monotonic()
            thread = bridge._thread
            bridge.stop()
            assert time.monotonic() - started < bridge_module.STOP_WAIT
            assert thread is not None and not thread.is_alive()
