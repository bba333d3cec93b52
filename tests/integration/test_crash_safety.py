"""A real process killed at real moments: the chat on disk is always whole.

(The whole restart story, a real run_ui.py killed mid-delegation, is in
tests/e2e/test_restart.py.)
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from helpers.files import BASE_DIR
from store import persist_chat

WRITER = """
import sys
from store import persist_chat
from core.chat_record import AgentRecord, ChatFile

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
        persist_chat.scan()  # also sweeps what the killed write left behind
        assert list((usr_dir / "chats" / "victim").glob(".*.tmp")) == []
        names.add(chat.name)
    assert len(names) > 1  # the kills landed at different moments
