"""Per-provider limits (the `provider_limits` setting): a call over its provider's limit
waits, says so with the time left, and goes on once the window allows; it never fails.
Against the scripted server, with the window's clock in the test's hands (no minute
waited, no timing asserted)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json

import pytest

from core.agent_types import UserMessage
from models import rate_limits
from models.llm import LimitWait, ModelConfig, ProviderRate
from models.model import for_config
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply

USER = [{"role": "user", "content": "Hello there, model"}]


class Clock:
    """The limits' clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    """Fresh windows on a clock the test moves; a waiting call looks again every 10 ms."""
    moved = Clock()
    monkeypatch.setattr(rate_limits, "LIMITS", rate_limits.RateLimits(moved))
    monkeypatch.setattr(rate_limits, "NOTICE_EVERY", 0.01)
    return moved


@pytest.fixture(params=["litellm", "openai"])
def client(request) -> str:
    return str(request.param)


def test_the_fourth_call_of_a_three_a_minute_provider_waits_then_goes(llm, client, clock):
    llm.script(*(Reply(f"Answer {n}.") for n in range(1, 5)))
    limit = ProviderRate("openai", requests=3)
    config = ModelConfig("openai/chat-model", api_base=llm.base_url, api_key="k", client=client,
                         limit=limit)  # fmt: skip
    heard: list[object] = []

    async def four_calls() -> list[str]:
        model = for_config(config)
        replies = [(await model.complete(USER)).text for _ in range(3)]
        fourth = asyncio.create_task(model.stream(USER, on_retry=heard.append))
        while not heard:  # the fourth waits for the window, and says so
            await asyncio.sleep(0.01)
        assert not fourth.done() and len(llm.chat_requests()) == 3
        clock.now += 60  # a minute later the first three have aged out
        replies.append((await fourth).text)
        return replies

    assert asyncio.run(four_calls()) == ["Answer 1.", "Answer 2.", "Answer 3.", "Answer 4."]
    notice = heard[0]
    assert isinstance(notice, LimitWait) and notice.what == "requests"
    assert notice.text == "Waiting 60 s for openai's limit of 3 requests a minute"


def test_a_chat_over_its_providers_limit_shows_the_wait_on_its_row(make_context, llm, clock,
                                                                   monkeypatch):  # fmt: skip
    limits = {"openai/chat-model": {"rpm": 1, "tpm": 0}}
    monkeypatch.setenv("CADRE_PROVIDER_LIMITS", json.dumps(limits))
    llm.script(Reply(answer("First.")), Reply(answer("Second.")))
    context = make_context()
    assert context.communicate(UserMessage("one")).result(30) == "First."

    second = context.communicate(UserMessage("two"))

    def waiting_row():
        rows = [i for i in context.log.items if i.type == "agent"]
        return rows[-1] if "Waiting" in rows[-1].heading else None

    row = wait_for(waiting_row, what="the step's row to say it waits")
    assert "for openai/chat-model's limit of 1 request a minute" in row.kvps["retrying"]
    assert not second.done() and len(llm.chat_requests()) == 1  # waiting, not failed
    clock.now += 60
    assert second.result(30) == "Second."
    assert [i for i in context.log.items if i.type == "error"] == []


def test_a_provider_is_found_by_the_longest_prefix_of_the_models_name():
    limits = {"openrouter": {"rpm": 10}, "openrouter/anthropic": {"tpm": 500}, "ollama": {}}
    assert rate_limits.provider_rate("openrouter/openai/gpt-4.1", limits) == ProviderRate(
        "openrouter", requests=10
    )
    found = rate_limits.provider_rate("openrouter/anthropic/claude", limits)
    assert found == ProviderRate("openrouter/anthropic", tokens=500)
    assert rate_limits.provider_rate("ollama/llama3", limits) is None  # no limit set
    assert rate_limits.provider_rate("openrouterx/m", limits) is None  # not its prefix


def test_tokens_a_minute_hold_a_call_until_enough_have_aged_out(clock):
    limits = rate_limits.RateLimits(clock)
    rate = ProviderRate("openai", tokens=1000)
    first, _, _ = limits.try_take(rate, 600)
    assert first is not None
    first.spent(800)  # the call really used more than its prompt's estimate
    clock.now += 10
    turn, wait, what = limits.try_take(rate, 300)
    assert turn is None and what == "tokens" and wait == pytest.approx(50)
    clock.now += 50
    assert limits.try_take(rate, 300)[0] is not None


async def _waiting(task: asyncio.Task, heard: list[object]) -> bool:
    """Whether `task` (a take) waits: it said so before it got its turn."""
    while not heard and not task.done():
        await asyncio.sleep(0.01)
    return not task.done()


def test_a_call_that_waits_is_not_overtaken_by_later_smaller_ones(clock):
    # Without a queue, small calls arriving while a big one waits keep the window full, and
    # the big one waits for ever.
    limits = rate_limits.RateLimits(clock)
    rate = ProviderRate("openai", tokens=1000)

    async def calls() -> None:
        await limits.take(rate, 400, None)
        big_heard: list[object] = []
        big = asyncio.create_task(limits.take(rate, 900, big_heard.append))
        assert await _waiting(big, big_heard)
        clock.now += 59  # a small one that would fit comes while the big one waits
        small_heard: list[object] = []
        small = asyncio.create_task(limits.take(rate, 400, small_heard.append))
        assert await _waiting(small, small_heard)
        clock.now += 1  # the first aged out: the big one's turn, the small one still waits
        await big
        assert await _waiting(small, small_heard)
        clock.now += 60
        await small

    asyncio.run(calls())


def test_a_waiting_call_stopped_leaves_its_place_in_the_queue(clock):
    limits = rate_limits.RateLimits(clock)
    rate = ProviderRate("openai", requests=1)

    async def calls() -> None:
        await limits.take(rate, 0, None)
        heard: list[object] = []
        waiting = asyncio.create_task(limits.take(rate, 0, heard.append))
        assert await _waiting(waiting, heard)
        waiting.cancel()  # the user's Stop cancels the run's task
        with pytest.raises(asyncio.CancelledError):
            await waiting
        clock.now += 60
        await asyncio.wait_for(limits.take(rate, 0, None), 30)  # nobody ahead of it now

    asyncio.run(calls())


def test_a_chat_waiting_for_its_providers_limit_stops_at_once(make_context, llm, clock,
                                                             monkeypatch):  # fmt: skip
    monkeypatch.setenv("CADRE_PROVIDER_LIMITS", json.dumps({"openai": {"rpm": 1}}))
    llm.script(Reply(answer("First.")))
    context = make_context()
    assert context.communicate(UserMessage("one")).result(30) == "First."
    second = context.communicate(UserMessage("two"))
    wait_for(lambda: "Waiting" in [i for i in context.log.items if i.type == "agent"][-1].heading,
             what="the step's row to say it waits")  # fmt: skip
    context.stop()  # the minute is not over: the wait ends with the Stop, not the window
    with pytest.raises(concurrent.futures.CancelledError):
        second.result(30)
    assert len(llm.chat_requests()) == 1


def test_a_waiting_call_whose_loop_is_gone_loses_its_place(clock):
    # A wait on an event loop that ended without ending it (no Stop, no cancellation) must
    # not hold its provider's line for ever.
    looks = Clock()
    limits = rate_limits.RateLimits(clock, looks)
    rate = ProviderRate("openai", requests=1)

    async def waits() -> asyncio.Future:
        await limits.take(rate, 0, None)
        heard: list[object] = []
        stuck = asyncio.ensure_future(limits.take(rate, 0, heard.append))
        assert await _waiting(stuck, heard)
        return stuck  # its loop stops here: the wait stays pending, never resumed

    gone = asyncio.new_event_loop()
    stuck = gone.run_until_complete(waits())
    clock.now += 60  # the window has room again
    looks.now += rate_limits.GONE_AFTER + 1  # and the one in line has not looked since
    later = asyncio.new_event_loop()
    try:
        assert later.run_until_complete(asyncio.wait_for(limits.take(rate, 0, None), 5))
    finally:
        later.close()
    assert not stuck.done()
