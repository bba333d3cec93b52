"""A chat's context variables: set through the API, the OpenAI endpoint and the UI's route,
read by tools (subordinates too), kept across a restart, and sent to the model only when a
prompt file uses them."""

from __future__ import annotations

import json

import pytest

from core.agent_types import UserMessage
from tests.integration.test_persistence import reload
from tests.support.agents import answer, backdate, make_profile, reply
from tests.support.fake_llm import Reply

KEY = {"X-API-Key": "api-secret"}
#: A value that must never reach the model unless a prompt asks for it.
SECRET_ISH = "ACME-7731-quartz"

#: Keeps what its agent's chat variables were when it ran; tells the model only their count.
READ_CONTEXT = """
from core.tool import Response, Tool, ToolArgs

class ReadContext(Tool):
    Args = ToolArgs

    async def execute(self, args):
        seen = dict(self.agent.context.variables)
        self.agent.set_data("variables_seen", seen)
        return Response(message=f"{len(seen)} variables read")
"""


@pytest.fixture(autouse=True)
def _api_key(monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")


@pytest.fixture
def desk(usr_dir):
    """A profile with the tool above; its main prompt uses no variable."""
    return make_profile(usr_dir, "desk", tools={"read_context": READ_CONTEXT})


def chats_of(server):
    return server.app.extensions["cadre.chats"]


def everything_sent(llm) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in llm.requests)


def test_api_context_reaches_a_subordinates_tool_and_never_the_model(http, server, llm, desk):
    llm.script(
        Reply(reply("call_subordinate", message="Look the customer up.", profile="desk")),
        Reply(reply("read_context")),
        Reply(answer("Looked up.")),
        Reply(answer("All done.")),
    )
    sent = {"message": "Help the customer.", "context": {"customer": SECRET_ISH, "tier": "gold"}}
    response = http.post("/api/v1/message", json=sent, headers=KEY)
    assert response.status_code == 200 and response.json["response"] == "All done."
    chat_id = response.json["context_id"]
    context = chats_of(server).get(chat_id)
    a0, a1 = context.agents()
    # The subordinate's tool read the chat's variables: one set, shared by the whole chain.
    assert a1.get_data("variables_seen") == {"customer": SECRET_ISH, "tier": "gold"}
    assert SECRET_ISH not in everything_sent(llm)
    shown = http.get(f"/api/v1/chats/{chat_id}", headers=KEY).json
    assert shown["variables"] == {"customer": SECRET_ISH, "tier": "gold"}

    # A later message changes some (null removes one) and keeps the rest.
    llm.script(Reply(reply("read_context")), Reply(answer("Again.")))
    again = {"message": "Once more.", "context_id": chat_id, "context": {"tier": None, "x": "1"}}
    http.post("/api/v1/message", json=again, headers=KEY)
    assert http.get(f"/api/v1/chats/{chat_id}", headers=KEY).json["variables"] == {
        "customer": SECRET_ISH,
        "x": "1",
    }
    assert SECRET_ISH not in everything_sent(llm)


@pytest.mark.parametrize(
    ("variables", "words"),
    [
        ({"1st": "x"}, "context: the variable name '1st' is not allowed"),
        ({"n": 5}, "context: the variable 'n' must be text, not int"),
        ("customer=ACME", "context: the variables must be an object of names and texts"),
    ],
)
def test_bad_api_context_is_refused_in_words_and_starts_nothing(http, server, variables, words):
    response = http.post(
        "/api/v1/message", json={"message": "hi", "context": variables}, headers=KEY
    )
    assert response.status_code == 400 and response.json["error"].startswith(words)
    assert len(chats_of(server).registry) == 0


def test_a_prompt_that_uses_a_variable_sends_it_and_sees_its_changes(http, llm, usr_dir, desk):
    (desk / "prompts" / "agent.system.main.md").write_text(
        "You serve {{ctx.customer}}.{{if ctx.tier}} Tier: {{ctx.tier}}.{{endif}}"
    )
    backdate(usr_dir, 3600)  # settled files: the built prompt is reused, not re-read
    llm.script(Reply(answer("Hello.")), Reply(answer("Hello again.")))
    first = {"message": "Hi.", "profile": "desk", "context": {"customer": SECRET_ISH}}
    chat_id = http.post("/api/v1/message", json=first, headers=KEY).json["context_id"]
    system = llm.chat_requests()[0].messages[0]["content"]
    assert system.startswith(f"You serve {SECRET_ISH}.") and "Tier" not in system
    # The chat's system prompt was built with the old value: a change rebuilds it.
    later = {"message": "Hi.", "context_id": chat_id, "context": {"customer": "Initech"}}
    http.post("/api/v1/message", json={**later, "context": {"customer": "Initech", "tier": "2"}},
              headers=KEY)  # fmt: skip
    # The agent's last call (the chat's naming, a utility call, may come after it).
    [*_, last] = [r for r in llm.chat_requests() if r.body["model"] != "util-model"]
    assert last.messages[0]["content"].startswith("You serve Initech. Tier: 2.")


def test_openai_metadata_sets_the_variables(http, server, llm, desk):
    llm.script(Reply(reply("read_context")), Reply(answer("Read.")))
    body = {
        "model": "cadre/desk",
        "messages": [{"role": "user", "content": "Read the context."}],
        "metadata": {"customer": SECRET_ISH},
    }
    response = http.post("/v1/chat/completions", json=body, headers=KEY)
    assert response.status_code == 200
    assert response.json["choices"][0]["message"]["content"] == "Read."
    (context,) = chats_of(server).registry.all()
    assert context.variables == {"customer": SECRET_ISH}
    assert context.agent0.get_data("variables_seen") == {"customer": SECRET_ISH}
    assert SECRET_ISH not in everything_sent(llm)

    bad = http.post("/v1/chat/completions", json={**body, "metadata": {"customer": None}},
                    headers=KEY)  # fmt: skip
    assert bad.status_code == 400
    assert bad.json["error"]["message"] == (
        "metadata: the variable 'customer' must be text, not NoneType"
    )


def test_the_editor_route_replaces_the_set_and_refuses_in_words(http, server):
    context = chats_of(server).new_chat()
    url = f"/api/chats/{context.id}/variables"
    assert http.get(url).json == {"variables": {}}
    saved = http.put(url, json={"variables": {"customer": "ACME", "tier": "gold"}})
    assert saved.status_code == 200
    assert http.put(url, json={"variables": {"customer": "ACME"}}).json == {
        "variables": {"customer": "ACME"}
    }
    refused = http.put(url, json={"variables": {"customer": "ACME", "bad name": "x"}})
    assert refused.status_code == 400
    assert refused.json["error"].startswith("variables: the variable name 'bad name' is not")
    assert context.variables == {"customer": "ACME"}  # nothing changed
    # A change from another site (no CSRF token) is refused by the page routes' guard.
    stranger = server.app.test_client()
    assert stranger.put(url, json={"variables": {}}).status_code in (400, 403)
    assert context.variables == {"customer": "ACME"}


def test_variables_survive_a_restart_and_a_reset(server, llm, usr_dir):
    context = chats_of(server).new_chat()
    context.set_variables({"customer": "ACME"})
    llm.script(Reply(answer("Hi.")))
    assert context.communicate(UserMessage("Hello.")).result(30) == "Hi."
    again, runtime = reload(usr_dir)
    try:
        assert again.get(context.id).variables == {"customer": "ACME"}
        assert again.reset(context.id).variables == {"customer": "ACME"}
    finally:
        runtime.stop()


def test_a_prompt_using_a_missing_variable_says_so_and_the_chat_goes_on(http, server, llm, desk):
    (desk / "prompts" / "agent.system.main.md").write_text("You serve {{ctx.customer}}.")
    sent = {"message": "Hi.", "profile": "desk"}
    response = http.post("/api/v1/message", json=sent, headers=KEY)
    assert response.status_code == 502
    assert "{{ctx.customer}} is not set" in response.json["error"]
    assert llm.chat_requests() == []  # nothing reached the model
    chat_id = response.json["context_id"]
    errors = [i for i in chats_of(server).get(chat_id).log.items if i.type == "error"]
    assert errors and "{{ctx.customer}} is not set" in errors[-1].content
    llm.script(Reply(answer("Hello, ACME.")))
    fixed = {"message": "Hi.", "context_id": chat_id, "context": {"customer": "ACME"}}
    assert http.post("/api/v1/message", json=fixed, headers=KEY).json["response"] == "Hello, ACME."
