"""A model that streams without end, too slowly or not at all: each call is bounded.

A reply past `llm_max_reply_chars` is ended and goes back to the model as a repairable
error; `llm_timeout` bounds a whole call, `llm_first_chunk_timeout` the wait for the
first chunk, `llm_between_chunks_timeout` a silence mid-stream. Whatever ends a stream
closes its HTTP connection (the fake server sees the client hang up), and one chat's
stream never holds the others up.
"""

from __future__ import annotations

import concurrent.futures
import time

import pytest

from core.agent_types import UserMessage
from helpers.errors import ProviderError, RunError
from tests.support.agents import answer, history_text, wait_for
from tests.support.fake_llm import Endless, Hang, Reply, model_is

#: Each test runs through both model clients (litellm, the lean OpenAI-SDK one).
pytestmark = pytest.mark.usefixtures("model_client")


def items_of(context, kind):
    return [item for item in context.log.items if item.type == kind]


def closed_by_client(stream: Endless, count: int = 1) -> None:
    wait_for(
        lambda: stream.stats.client_closed >= count,
        10,
        f"the client to close {count} stream(s); seen: {stream.stats}",
    )


def test_an_endless_stream_is_ended_by_the_cap_and_the_model_told(make_context, llm):
    endless = Endless(chunk_size=4096, max_seconds=40)
    llm.script(endless, Reply(answer("shorter now")))
    context = make_context(llm_max_reply_chars=50_000)
    assert context.communicate(UserMessage("write it all")).result(30) == "shorter now"
    closed_by_client(endless)
    assert endless.stats.gave_up == 0
    # The stream was ended near the cap, not read on.
    assert endless.stats.chars_sent < 10_000_000
    requests = llm.chat_requests()
    assert len(requests) == 2
    told = requests[1].messages[-1]["content"]
    assert "50,000 characters" in told and "shorter" in told
    [warning] = items_of(context, "warning")
    assert warning.heading == "A0: Reply too long"
    streamed = context.log.items[1]
    assert streamed.heading == "A0: Writing without end"
    assert streamed.kvps["status"] == "too long"
    # Its row says why, and keeps the start of what was sent (not all of it).
    assert "50,000 characters" in streamed.kvps["reason"]
    assert streamed.kvps["reply"].endswith("more characters)")
    assert len(streamed.kvps["reply"]) < 9_000
    # The endless text itself is not kept for the model to read again.
    assert "and so on and so on" not in history_text(context.agent0)
    assert items_of(context, "error") == []


def test_the_breaker_stops_a_model_that_only_streams_without_end(make_context, llm):
    streams = [Endless(chunk_size=8192, max_seconds=40) for _ in range(2)]
    llm.script(*streams)
    context = make_context(llm_max_reply_chars=50_000, max_unusable_replies=2)
    with pytest.raises(RunError, match="2 unusable replies"):
        context.communicate(UserMessage("write it all")).result(30)
    for stream in streams:
        closed_by_client(stream)
    assert len(llm.chat_requests()) == 2
    [error] = items_of(context, "error")
    assert "50,000 characters" in error.content
    # The chat stays usable.
    llm.script(Reply(answer("back")))
    assert context.communicate(UserMessage("again")).result(30) == "back"


def test_an_endless_stream_never_holds_another_chat_up(make_context, llm):
    # One chat's model streams 64 KB chunks back to back, forever: each reply is cut at
    # the cap and the model, told so, streams the next one. A second chat on the same
    # runtime must answer a trivial message meanwhile (a liveness check, with room for a
    # loaded machine: alone it takes some 50 ms).
    flood = Endless(max_seconds=40)
    llm.add_rule(model_is("flooder"), flood)
    flooding = make_context(chat_model="openai/flooder", max_unusable_replies=10_000)
    run = flooding.communicate(UserMessage("flood"))
    wait_for(lambda: flood.stats.chars_sent > 1_000_000, 20, "the flood to be under way")
    llm.script(Reply(answer("pong")))
    other = make_context()
    sent_before = flood.stats.chars_sent
    began = time.monotonic()
    assert other.communicate(UserMessage("ping")).result(30) == "pong"
    took = time.monotonic() - began
    assert flooding.running, "the flooding chat was still at work"
    assert flood.stats.chars_sent > sent_before, "the flood went on meanwhile"
    assert took < 3.0, f"the second chat took {took:.1f} s while the first streamed"
    flooding.stop()
    with pytest.raises(concurrent.futures.CancelledError):
        run.result(10)
    wait_for(lambda: flood.stats.open_streams == 0, 10, f"every stream closed: {flood.stats}")
    assert flood.stats.gave_up == 0


def test_llm_timeout_ends_a_stream_that_goes_on_too_long(make_context, llm):
    slow = Endless(chunk_size=64, delay=0.05, max_seconds=30)
    llm.script(slow)
    context = make_context(llm_timeout=1.5, llm_max_reply_chars=10_000_000)
    with pytest.raises(ProviderError, match=r"llm_timeout"):
        context.communicate(UserMessage("hi")).result(20)
    closed_by_client(slow)
    assert len(llm.chat_requests()) == 1  # output had begun: not tried again
    [error] = items_of(context, "error")
    assert "1.5 s" in error.heading and "Traceback" not in error.content


def test_a_stalled_stream_is_ended_after_the_between_chunks_timeout(make_context, llm):
    stalled = Endless(chunk_size=100, stall_after=3, max_seconds=30)
    llm.script(stalled)
    context = make_context(llm_between_chunks_timeout=0.5)
    with pytest.raises(ProviderError, match=r"llm_between_chunks_timeout"):
        context.communicate(UserMessage("hi")).result(20)
    closed_by_client(stalled)
    assert len(llm.chat_requests()) == 1
    [error] = items_of(context, "error")
    assert "0.5 s" in error.heading
    llm.script(Reply(answer("recovered")))
    assert context.communicate(UserMessage("again")).result(30) == "recovered"


# The first-chunk wait starts before the request is sent: under load on a 2-core machine,
# 0.5 s could pass before the fake server even saw it, so these allow 2 s.
def test_no_first_chunk_is_retried(make_context, llm):
    llm.script(Hang(seconds=10), Reply(answer("second try")))
    context = make_context(llm_first_chunk_timeout=2, llm_retries=1)
    assert context.communicate(UserMessage("hi")).result(20) == "second try"
    assert len(llm.chat_requests()) == 2
    assert items_of(context, "error") == []


def test_no_first_chunk_after_every_retry_is_a_provider_error(make_context, llm):
    llm.script(Hang(seconds=10), Hang(seconds=10))
    context = make_context(llm_first_chunk_timeout=2, llm_retries=1)
    with pytest.raises(ProviderError, match=r"llm_first_chunk_timeout\) \(2 tries\)"):
        context.communicate(UserMessage("hi")).result(20)
    # Tried twice; the fake server heard the second try only if it came within its 2 s (on
    # a machine loaded past its cores it did not, once).
    assert 1 <= len(llm.chat_requests()) <= 2
    [error] = items_of(context, "error")
    assert "within 2 s" in error.heading


def test_reasoning_counts_toward_the_cap(make_context, llm):
    thinking = Reply(answer("never read"), reasoning="hmm, " * 15_000, chunk_size=4096)
    llm.script(thinking, Reply(answer("brief")))
    context = make_context(llm_max_reply_chars=50_000)
    assert context.communicate(UserMessage("think")).result(30) == "brief"
    assert "50,000 characters" in llm.chat_requests()[1].messages[-1]["content"]


def test_a_stall_after_a_complete_reply_ends_the_read_quietly(make_context, llm):
    # The reply is whole; the provider then goes silent instead of closing: the
    # answer stands, and the silence costs no more than the between-chunks bound.
    silent = Endless(head=answer("all said") + "\n", stall_after=0, max_seconds=30)
    llm.script(silent)
    context = make_context(llm_between_chunks_timeout=0.5)
    assert context.communicate(UserMessage("hi")).result(20) == "all said"
    closed_by_client(silent)
    assert items_of(context, "error") == []
