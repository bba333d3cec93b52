"""Real processes killed at real moments: the chat on disk is always whole."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

from helpers import persist_chat
from helpers.files import BASE_DIR
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply

WRITER = """
import sys
from helpers import persist_chat
from helpers.persist_chat import AgentRecord, ChatFile

n = 0
while True:
    n += 1
    history = {"current": {"messages": [{"ai": i % 2 == 1, "content": "x" * 500 + str(i),
                                         "tokens": 10} for i in range(n % 200)]}}
    persist_chat.write_chat(ChatFile(id="victim", created_at=1.0, name=f"save {n}",
                                     agents=[AgentRecord(number=0, profile="agent0",
                                                         history=history)]))
    if n == 1:
        print("ready", flush=True)
"""


def test_sigkill_during_saves_always_leaves_a_loadable_file(usr_dir):
    env = {**os.environ, "CADRE_USR_DIR": str(usr_dir)}
    rng = random.Random(7)
    names = set()
    for _ in range(8):
        writer = subprocess.Popen([sys.executable, "-c", WRITER], cwd=BASE_DIR, env=env,
                                  stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.01, 0.25))
        writer.send_signal(signal.SIGKILL)
        writer.wait(10)
        chat = persist_chat.read_chat("victim")  # raises if the file were half-written
        assert chat.agents[0].profile == "agent0"
        persist_chat.load_all()  # also sweeps what the killed write left behind
        assert list((usr_dir / "chats" / "victim").glob(".*.tmp")) == []
        names.add(chat.name)
    assert len(names) > 1  # the kills landed at different moments


def run_process(env, *args):
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.chat_process", *args],
        cwd=BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_killed_while_the_subordinate_streams_then_continued(llm, usr_dir):
    env = dict(os.environ)  # the llm fixture set CADRE_* to the fake server
    llm.script(
        Reply(reply("call_subordinate", message="Research X.", profile="researcher", reset=True)),
        Reply(answer("X is " + "really " * 100 + "old."), chunk_size=4, delay=0.03),
    )
    first = run_process(env, "send", "What about X?")
    assert first.stdout is not None
    chat_id = json.loads(first.stdout.readline())["chat"]
    for line in first.stdout:
        item = json.loads(line).get("item")
        if item and item["type"] == "response" and item["agentno"] == 1 and item["content"]:
            break  # A1 is streaming its answer
    first.send_signal(signal.SIGKILL)
    first.wait(10)

    llm.script(Reply(answer("X is old.")), Reply(answer("Final: X is old.")))
    second = run_process(env, "send", "please go on", "--chat", chat_id)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0] == {"chat": chat_id, "interrupted": True, "working": 1}
    assert lines[-1] == {"answer": "Final: X is old."}
    chat_calls = [r for r in llm.chat_requests() if r.body["model"] == "chat-model"]
    a1_prompt, a0_prompt = (r.messages for r in chat_calls[-2:])
    assert "You are a careful researcher" in a1_prompt[0]["content"]
    assert "please go on" in a1_prompt[-1]["content"]
    assert "[Result of tool `call_subordinate`]\nX is old." in a0_prompt[-1]["content"]
    saved = persist_chat.read_chat(chat_id)
    assert not saved.running and saved.log["items"][-1]["content"] == "Final: X is old."
