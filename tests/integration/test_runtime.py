"""The runtime around the loop: live streaming into the log, many chats at once,
the utility model, the context registry, start-up cost."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading

from core.agent_types import UserMessage
from core.chat import Chat
from helpers.files import BASE_DIR
from initialize import agent_config
from store.open_chats import OpenChats
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply, model_is


def test_headline_thoughts_and_answer_appear_while_streaming(make_context, llm):
    text = "A long answer that arrives in many small pieces. " * 4
    llm.script(Reply(answer(text), chunk_size=5, delay=0.005))
    context = make_context()
    seen: list[tuple[str, str, str]] = []
    context.log.subscribe(lambda item: seen.append((item.type, item.heading, item.content)))
    assert context.communicate(UserMessage("go")).result(30) == text
    headings = [h for kind, h, _ in seen if kind == "agent"]
    assert "A0: Generating..." in headings and "A0: Answering" in headings
    # The headline shows up before the answer is complete.
    first_headline = next(n for n, (k, h, _) in enumerate(seen) if h == "A0: Answering")
    growing = [c for kind, _, c in seen if kind == "response"]
    assert first_headline < next(n for n, (k, _, _) in enumerate(seen) if k == "response")
    assert len(set(growing)) > 10, "the answer did not stream into the log"
    assert all(text.startswith(c) for c in growing)


def test_fifty_chats_run_at_once(make_context, llm, runtime):
    # The server holds every reply until all fifty requests are in: that only
    # happens if the chats really run side by side.
    gate = threading.Event()
    llm.add_rule(lambda body: True, Reply(answer("pong"), chunk_size=20, gate=gate))
    contexts = [make_context() for _ in range(50)]
    runs = [c.communicate(UserMessage(f"ping {n}")) for n, c in enumerate(contexts)]
    wait_for(lambda: len(llm.chat_requests()) == 50, timeout=30, what="fifty requests in flight")
    gate.set()
    assert [run.result(60) for run in runs] == ["pong"] * 50
    assert all(not c.running for c in contexts)
    for context in contexts:  # each chat's log has its own items, once each
        assert [i.type for i in context.log.items] == ["user", "agent", "response"]


def test_utility_model_call_is_logged_and_counted(make_context, llm):
    llm.add_rule(model_is("util-model"), Reply("A short title", usage=(50, 4)))
    context = make_context()
    text = context.runtime.submit(
        context.agent0.call_utility_model("Name this chat.", "user: hello", "Naming the chat")
    ).result(30)
    assert text == "A short title"
    util = context.log.items[-1]
    assert util.type == "util" and util.heading == "Naming the chat" and util.content == text
    assert context.usage.prompt_tokens == 50 and context.usage.completion_tokens == 4
    assert llm.chat_requests()[0].body["model"] == "util-model"


def test_context_registry_is_an_object(llm):
    first, second = OpenChats(), OpenChats()
    a = first.add(Chat(agent_config()))
    b = first.add(Chat(agent_config(), created_at=a.created_at - 10))
    assert first.get(a.id) is a and second.get(a.id) is None
    assert first.all() == [b, a]
    assert first.remove(b.id) is b and len(first) == 1


def test_runtime_runs_many_blocking_calls_at_once(runtime):
    """Twenty blocking calls meet at a barrier: they only can if they run side by side."""
    barrier = threading.Barrier(20, timeout=10)

    async def meet() -> None:
        await asyncio.gather(*(asyncio.to_thread(barrier.wait) for _ in range(20)))

    runtime.submit(meet()).result(15)
    assert not barrier.broken


def test_importing_agent_does_not_import_litellm():
    code = "import sys, agent, initialize; assert 'litellm' not in sys.modules, 'litellm imported'"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRE_")}
    done = subprocess.run([sys.executable, "-c", code], cwd=BASE_DIR, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_token_counting_works_offline_from_litellms_bundled_files(tmp_path):
    code = (
        "import os; from models.tokens import count_tokens;"
        "n = count_tokens('hello world'); print(n, os.environ['TIKTOKEN_CACHE_DIR'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    env["HOME"] = str(tmp_path)  # no cache of an earlier download can help
    done = subprocess.run([sys.executable, "-c", code], cwd=BASE_DIR, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    count, folder = done.stdout.split()
    assert count == "2" and folder.endswith(os.path.join("litellm_core_utils", "tokenizers"))
