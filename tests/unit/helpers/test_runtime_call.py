"""helpers/runtime.py `call`: a function run on the agents' loop thread, its result or
its exception handed back to the calling thread."""

from __future__ import annotations

import threading

import pytest

from helpers.errors import UserError
from helpers.runtime import AgentRuntime


@pytest.fixture
def runtime():
    started = AgentRuntime().start()
    yield started
    started.stop()


def test_call_runs_on_the_loop_and_hands_back_the_result(runtime):
    assert runtime.call(lambda a, b: (threading.current_thread().name, a + b), 2, 3) == (
        "cadre-agents",
        5,
    )


def test_call_raises_the_functions_error_in_the_caller(runtime):
    def refuse() -> None:
        raise UserError("this chat is closed")

    with pytest.raises(UserError, match="this chat is closed"):
        runtime.call(refuse)


def test_call_from_the_loop_thread_runs_at_once(runtime):
    inner = runtime.call(lambda: runtime.call(lambda: threading.current_thread().name))
    assert inner == "cadre-agents"
