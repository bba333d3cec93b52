"""A message that comes in while litellm is still being imported (seconds, at start)
waits for it off the agents' loop: every chat shares that loop, and the others go on.

Run in a fresh interpreter, where litellm is not imported yet.
"""

from __future__ import annotations

import json
import urllib.request

from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply
from tests.support.fresh_python import run_script
from tests.support.server_process import ServerProcess, call_api, server_env

#: The scripts' start: a fake model server answering "hello" set as every model.
FAKE_PROVIDER = r"""
import asyncio, importlib.abc, json, os, sys, threading, time
from tests.support.agents import answer
from tests.support.fake_llm import Reply, start_fake_llm

server = start_fake_llm()
server.script(Reply(answer("hello")))
for prefix in ("CHAT", "UTIL", "EMBED"):
    os.environ[f"CADRE_{prefix}_MODEL"] = f"openai/{prefix.lower()}-model"
    os.environ[f"CADRE_{prefix}_API_BASE"] = server.base_url
    os.environ[f"CADRE_{prefix}_API_KEY"] = "test-key"
"""

SCRIPT = (
    FAKE_PROVIDER
    + r"""
os.environ["CADRE_MEMORY_RECALL_TOKENS"] = "0"  # no recall: the model call comes first

from core.agent_types import UserMessage
from core.chat import Chat
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
context = Chat(agent_config(), runtime)
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
)


def test_the_loop_keeps_going_while_litellm_is_imported(usr_dir):
    seen = run_script(SCRIPT, CADRE_USR_DIR=str(usr_dir))
    assert seen["answer"] == "hello"
    # The import takes seconds; the loop may pause for the GIL, never for the whole import.
    assert seen["longest_gap"] < seen["import"] / 3, seen


HALF_IMPORTED = r"""
import asyncio, importlib.abc, json, sys, threading, time
from models import openai_model

inside = threading.Event()

class Slowly(importlib.abc.MetaPathFinder):
    # Holds the openai package half imported (its constants not yet set) for a moment, as a
    # busy machine did while start-up's thread imported litellm, which imports openai.
    def find_spec(self, name, path=None, target=None):
        if name == "openai._client" and threading.current_thread().name == "importer":
            inside.set()
            time.sleep(1.0)
        return None

sys.meta_path.insert(0, Slowly())
assert "openai" not in sys.modules
threading.Thread(target=lambda: __import__("openai"), name="importer", daemon=True).start()
inside.wait(30)
sdk = asyncio.run(openai_model.openai_loaded())  # what the lean client's first call asks
print(json.dumps({"whole": hasattr(sdk, "DEFAULT_TIMEOUT") and hasattr(sdk, "AsyncOpenAI")}))
"""


def test_the_sdk_asked_for_while_another_thread_imports_it_comes_whole(usr_dir):
    """The first message right after start was answered 'partially initialized module
    openai has no attribute DEFAULT_TIMEOUT': the lean client took the SDK from
    sys.modules while start-up's thread was still importing it. Run in a fresh interpreter,
    the import held half-way by an import hook of the test's own."""
    assert run_script(HALF_IMPORTED) == {"whole": True}


HELD_LITELLM = (
    FAKE_PROVIDER
    + r"""
os.environ["CADRE_CHAT_MODEL"] = "openai/gpt-4.1-mini"  # a model the price map names
os.environ["CADRE_MEMORY_RECALL_TOKENS"] = "0"

class Held(importlib.abc.MetaPathFinder):
    # litellm's import, as on a slow machine (it took 6.8 s there): held for a minute.
    def find_spec(self, name, path=None, target=None):
        if name == "litellm.main":
            time.sleep(60)
        return None

sys.meta_path.insert(0, Held())
from core.agent_types import UserMessage
from core.chat import Chat
from models import llm
from helpers.runtime import AgentRuntime
from initialize import agent_config

runtime = AgentRuntime().start()
context = Chat(agent_config(), runtime)
llm.preload()  # as run_ui.py does at start
began = time.monotonic()
said = context.communicate(UserMessage("hi")).result(30)
usage = context.agent0.usage
print(json.dumps({"answer": said, "litellm_imported": llm.litellm_imported(),
                  "priced": usage.calls - usage.uncosted_calls, "cost": usage.cost > 0}))
server.stop()
os._exit(0)
"""
)


def test_the_first_answer_with_a_provider_does_not_wait_for_litellm(usr_dir):
    """The lean client makes the call without litellm; the price, the images and the reply
    schema were asked of litellm, so the first answer waited for its import (6.8 s)."""
    seen = run_script(HELD_LITELLM, CADRE_USR_DIR=str(usr_dir))
    assert seen == {"answer": "hello", "litellm_imported": False, "priced": 1, "cost": True}


def test_a_message_sent_as_soon_as_health_answers_is_answered(llm, tmp_path, monkeypatch):
    """A newcomer's first message, sent the moment `/health` answers, got a 502 ('partially
    initialized module openai'). Start-up's imports now begin once the port is bound, and
    `/health` says `ready` once a first call would find them done; before, the call waits."""
    monkeypatch.setenv("CADRE_API_KEY", "first-key")
    llm.script(Reply(answer("hello at once")))
    # A fresh interpreter: the point is start-up's own imports, which a fork has done.
    server = ServerProcess(server_env(), tmp_path / "server.log", fresh=True).start()
    try:
        said = call_api(server, "POST", "/api/v1/message", {"message": "hi"}, key="first-key")
        assert said["response"] == "hello at once"

        def ready() -> bool:
            with urllib.request.urlopen(f"{server.url}/health", timeout=5) as answer:
                return json.loads(answer.read())["ready"] is True

        wait_for(ready, timeout=60, what="/health to say ready")
    finally:
        server.stop()
    assert "Traceback" not in (tmp_path / "server.log").read_text()
