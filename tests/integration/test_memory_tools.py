"""Memory tools through the loop: keywords only, and with the fake server's embeddings."""

from __future__ import annotations

import json

from core.agent_types import UserMessage
from memory import memories
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply, model_is


def run(make_context, llm, *replies: str, **settings) -> list[str]:
    """Agent 0 works through `replies`; each tool result as the model saw it."""
    llm.add_rule(model_is("util-model"), Reply("A name"))
    llm.script(*[Reply(r) for r in replies], Reply(answer("done")))
    before = len(llm.chat_requests())
    context = make_context(**settings)
    context.communicate(UserMessage("remember things")).result(30)
    mine = [r for r in llm.chat_requests()[before:] if r.body["model"] != "util-model"]
    return [r.messages[-1]["content"] for r in mine[1:]]


def saved_id(result: str) -> str:
    return result.split("Saved as memory ")[1].split(".")[0]


def test_save_load_delete_and_forget_by_keywords(make_context, llm, monkeypatch):
    monkeypatch.setenv("CADRE_EMBED_API_BASE", "")  # no embedding model: keywords only
    monkeypatch.setenv("CADRE_EMBED_API_KEY", "")
    seen = run(
        make_context, llm,
        reply("memory_save", text="The user prefers tabs in Python", tags=["style"]),
        reply("memory_save", text="Deploy with docker compose", area="solutions"),
        reply("memory_load", query="python tabs"),
        reply("memory_forget", query="docker compose"),
        reply("memory_load", query="docker", headline="Again"),
    )  # fmt: skip
    assert "Saved as memory" in seen[0] and "Saved as memory" in seen[1]
    found = json.loads(seen[2].split("\n", 1)[1])
    assert [m["text"] for m in found] == ["The user prefers tabs in Python"]
    assert found[0]["tags"] == ["style"] and found[0]["area"] == "main"
    assert "1 memories deleted" in seen[3] and 'No memories match "docker"' in seen[4]
    assert llm.embedding_requests() == []


def test_vectors_come_from_the_embedding_model_and_a_new_model_reindexes(
    make_context, llm, usr_dir
):
    seen = run(
        make_context, llm,
        reply("memory_save", text="the capital of France is Paris"),
        reply("memory_load", query="the capital of France is Paris", threshold=0.99),
    )  # fmt: skip
    assert json.loads(seen[1].split("\n", 1)[1])[0]["text"] == "the capital of France is Paris"
    assert len(llm.embedding_requests()) == 2  # the memory, then the query
    store = memories.store_at(usr_dir / "memory" / "default" / "memory.db")
    assert store.embed_model() == "openai/embed-model"

    embedded_before = len(llm.embedding_requests())
    seen = run(make_context, llm, reply("memory_load", query="Paris"),
               embed_model="openai/other-embed")  # fmt: skip
    assert store.embed_model() == "openai/other-embed"
    inputs = [r.body["input"] for r in llm.embedding_requests()[embedded_before:]]
    assert inputs[0] == ["the capital of France is Paris"]  # the re-index, before the query
    item_id = json.loads(seen[0].split("\n", 1)[1])[0]["id"]
    deleted = run(make_context, llm, reply("memory_delete", ids=[item_id]))
    assert "1 memories deleted" in deleted[-1] and store.count() == 0


def test_solutions_are_memorised_after_a_run_when_asked(make_context, llm, usr_dir):
    from tests.support.agents import wait_for

    llm.add_rule(lambda body: "notebook of solutions" in json.dumps(body),
                 Reply("To deploy: run docker compose up -d in /srv/app."))  # fmt: skip
    llm.add_rule(model_is("util-model"), Reply("A name"))
    llm.script(Reply(answer("Deployed with docker compose.")), Reply(answer("Hi!")))
    context = make_context(memory_memorize=True)
    context.communicate(UserMessage("Deploy the app")).result(30)
    store = memories.store_at(usr_dir / "memory" / "default" / "memory.db")
    saved = wait_for(lambda: store.all(where=memories.Filter(kind="solutions")), what="a solution")
    assert saved[0].text == "To deploy: run docker compose up -d in /srv/app."
    assert saved[0].source == f"chat {context.id}"
    plain = make_context()  # the setting is off by default: nothing is asked
    plain.communicate(UserMessage("Say hi")).result(30)
    notebook = [r for r in llm.chat_requests() if "notebook of solutions" in json.dumps(r.body)]
    assert len(notebook) == 1
