"""helpers/runtime.py services: held by their class and found by it; what must end with
the loop is closed first thing in `stop`, while the agents' tasks still run."""

from __future__ import annotations

import asyncio
import logging

import pytest

from helpers.runtime import AgentRuntime


class Supervisor:
    """Stands for a service of an upper layer (the runtime names none of them)."""


class Browser:
    def __init__(self) -> None:
        self.closed_while: list[str] = []

    async def close(self, work: asyncio.Task[None]) -> None:
        self.closed_while.append("work running" if not work.done() else "work ended")


@pytest.fixture
def runtime():
    started = AgentRuntime().start()
    yield started
    started.stop()


def test_a_service_is_found_by_its_class_and_a_new_one_replaces_it(runtime):
    assert runtime.service(Supervisor) is None
    first = runtime.provide(Supervisor())
    assert runtime.service(Supervisor) is first
    assert runtime.service(Browser) is None  # another class: not this one
    second = runtime.provide(Supervisor())
    assert runtime.service(Supervisor) is second is not first


def test_stop_closes_a_service_before_the_agents_tasks_are_cancelled():
    runtime = AgentRuntime().start()
    browser = runtime.provide(Browser())
    work = runtime.call(lambda: asyncio.ensure_future(asyncio.sleep(3600)))
    runtime.close_first("the browser", lambda: browser.close(work))
    runtime.stop()
    assert browser.closed_while == ["work running"]
    assert work.cancelled()


def test_a_close_that_fails_is_logged_and_the_runtime_still_stops(caplog):
    runtime = AgentRuntime().start()

    async def broken() -> None:
        raise OSError("the driver is gone")

    runtime.close_first("the browser", broken)
    with caplog.at_level(logging.ERROR, logger="helpers.runtime"):
        runtime.stop()
    assert "the browser did not close cleanly" in caplog.text
    assert runtime.loop.is_closed()
