"""A message that comes in while litellm is still being imported (seconds, at start)
waits for it off the agents' loop: every chat shares that loop, and the others go on.

Run in a fresh interpreter, where litellm is not imported yet.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers.files import BASE_DIR

SCRIPT = r"""
import asyncio, json, os, sys, time
from tests.support.agents import answer
from tests.support.fake_llm import Reply, start_fake_llm

server = start_fake_llm()
server.script(Reply(answer("hello")))
for prefix in ("CHAT", "UTIL", "EMBED"):
    os.environ[f"CADRE_{prefix}_MODEL"] = f"openai/{prefix.lower()}-model"
    os.environ[f"CADRE_{prefix}_API_BASE"] = server.base_url
    os.environ[f"CADRE_{prefix}_API_KEY"] = "test-key"
os.environ["CADRE_MEMORY_RECALL_TOKENS"] = "0"  # no recall: the model call comes first

from agent import AgentContext, UserMessage
from models import llm
from helpers.runtime import AgentRuntime
from initialize import agent_config

assert "litellm" not in sys.modules
runtime = AgentRuntime().start()
ticks = []

async def heartbeat():
    while True:
        ticks.append(time.monotonic())
        await asyncio.sleep(0.005)

runtime.submit(heartbeat())
context = AgentContext(agent_config(), runtime)
began = time.monotonic()
llm.preload()  # as run_ui.py does at start: the message comes in while it imports
handle = context.communicate(UserMessage("hi"))
while llm._litellm is None:
    time.sleep(0.001)
imported = time.monotonic()
answer_text = handle.result(60)
during = [b - a for a, b in zip(ticks, ticks[1:]) if a >= began and b <= imported]
print(json.dumps({"answer": answer_text, "import": imported - began,
                  "longest_gap": max(during, default=imported - began)}))
server.stop()
os._exit(0)
"""


def test_the_loop_keeps_going_while_litellm_is_imported(usr_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRE_")}
    env["CADRE_USR_DIR"] = str(usr_dir)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=BASE_DIR, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["answer"] == "hello"
    # The import takes seconds; the loop may pause for the GIL, never for the whole import.
    assert seen["longest_gap"] < seen["import"] / 3, seen
