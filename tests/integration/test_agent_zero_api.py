"""`POST /api_message`: an Agent Zero API client's exact request, answered in its shape.

The client sends what Agent Zero's External API documents: a JSON body with
`message`, `context_id` ("" for a new chat), `lifetime_hours`, base64
`attachments` ({filename, base64}), `agent_profile`, `project_name`, and the key
in an `X-API-KEY` header; no cookie, no CSRF token.
"""

from __future__ import annotations

import base64
import logging

import pytest

from store.chats import ChatManager
from tests.support.agents import answer
from tests.support.fake_llm import Reply, model_is

KEY = "a0-client-key"
#: The headers an Agent Zero client sends (its connectivity guide's example).
HEADERS = {"Content-Type": "application/json", "X-API-KEY": KEY}
NOTES = "Flight TP1234 leaves at 09:40.\n"


@pytest.fixture(autouse=True)
def _api_key(monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", KEY)


@pytest.fixture
def client(server):
    """A client like Agent Zero's: no session, no CSRF token."""
    return server.app.test_client()


def chats_of(server) -> ChatManager:
    return server.app.extensions["cadre.chats"]


def a0_body(text: str, **fields) -> dict:
    return {"message": text, "context_id": "", "lifetime_hours": 24, "attachments": [],
            **fields}  # fmt: skip


def test_an_agent_zero_client_starts_a_chat_and_goes_on(client, server, llm, usr_dir, caplog):
    (usr_dir / "projects" / "trips").mkdir(parents=True)
    attachment = {"filename": "notes.txt", "base64": base64.b64encode(NOTES.encode()).decode()}
    # The chat's naming (and memorizing) ask the utility model after the answer: answered
    # here, or they may take the next scripted reply.
    llm.add_rule(model_is("util-model"), Reply("Flight"))
    llm.script(Reply(answer("At 09:40.")))
    body = a0_body("When does my flight leave?", attachments=[attachment],
                   agent_profile="researcher", project_name="trips", priority="high")  # fmt: skip
    body["x\nFORGED LOG LINE"] = 1  # a name must not start a line of the server log

    with caplog.at_level(logging.WARNING):
        first = client.post("/api_message", json=body, headers=HEADERS)

    assert first.status_code == 200, first.json
    assert set(first.json) == {"context_id", "response"} and first.json["response"] == "At 09:40."
    context = chats_of(server).get(first.json["context_id"])
    assert context.agent0.config.profile == "researcher" and context.project == "trips"
    saved = usr_dir / "chats" / context.id / "attachments" / "notes.txt"
    assert saved.read_text() == NOTES
    assert str(saved) in str(llm.chat_requests("chat-model")[-1].body["messages"][-1]["content"])
    assert "priority" in caplog.text and "/api_message" in caplog.text
    assert not any(line.startswith("FORGED") for line in caplog.text.splitlines())

    llm.script(Reply(answer("Gate 12.")))
    again = a0_body("Which gate?", context_id=context.id, agent_profile="researcher")
    second = client.post("/api_message", json=again, headers=HEADERS)

    assert second.json == {"context_id": context.id, "response": "Gate 12."}
    assert "When does my flight leave?" in str(llm.chat_requests("chat-model")[-1].body["messages"])


@pytest.mark.parametrize(
    ("headers", "status"),
    [({"Content-Type": "application/json"}, 401), ({**HEADERS, "X-API-KEY": "wrong"}, 401)],
)
def test_a_missing_or_wrong_key_is_refused(client, server, headers, status):
    response = client.post("/api_message", json=a0_body("hi"), headers=headers)

    assert response.status_code == status and "error" in response.json
    assert len(chats_of(server)) == 0


def test_the_api_is_off_while_the_key_setting_is_empty(client, monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", "")
    response = client.post("/api_message", json=a0_body("hi"), headers=HEADERS)
    assert response.status_code == 403 and "api_key" in response.json["error"]


@pytest.mark.parametrize(
    ("fields", "status", "words"),
    [
        ({"message": ""}, 400, "message"),
        ({"context_id": "nope"}, 404, "no chat"),
        ({"project_name": "ghost"}, 400, "ghost"),
        ({"agent_profile": "ghost"}, 400, "ghost"),
        ({"attachments": [{"filename": "a.txt", "base64": "%%%"}]}, 400, "base64"),
        ({"attachments": [{"name": "a.txt"}]}, 400, "attachments"),
        ({"lifetime_hours": "soon"}, 400, "lifetime_hours"),
    ],
)
def test_bad_input_gets_a_clear_error_and_makes_no_chat(client, server, fields, status, words):
    response = client.post("/api_message", json=a0_body("hi", **fields), headers=HEADERS)

    assert response.status_code == status and words in response.json["error"]
    assert len(chats_of(server)) == 0


def test_an_existing_chat_keeps_its_profile_and_project(client, server, llm, usr_dir):
    (usr_dir / "projects" / "trips").mkdir(parents=True)
    llm.script(Reply(answer("Hi.")))
    made = client.post("/api_message", json=a0_body("hi"), headers=HEADERS).json["context_id"]
    asked = len(llm.chat_requests("chat-model"))

    other = client.post("/api_message", headers=HEADERS,
                        json=a0_body("x", context_id=made, agent_profile="researcher"))  # fmt: skip
    moved = client.post("/api_message", headers=HEADERS,
                        json=a0_body("x", context_id=made, project_name="trips"))  # fmt: skip

    assert other.status_code == 400 and "profile" in other.json["error"]
    assert moved.status_code == 400 and "is not in project 'trips'" in moved.json["error"]
    assert chats_of(server).get(made).project is None
    assert len(llm.chat_requests("chat-model")) == asked  # neither message reached the chat


def test_a_hostile_attachment_name_stays_in_the_chat_folder(client, server, llm, usr_dir):
    llm.script(Reply(answer("Read.")))
    hostile = {"filename": "../../../etc/passwd", "base64": base64.b64encode(b"x").decode()}
    response = client.post("/api_message", json=a0_body("hi", attachments=[hostile]),
                           headers=HEADERS)  # fmt: skip

    assert response.status_code == 200
    folder = usr_dir / "chats" / response.json["context_id"] / "attachments"
    assert [p.name for p in folder.iterdir()] == ["etc_passwd"]


def test_the_v1_api_keeps_its_own_shape(client, llm):
    llm.script(Reply(answer("Same.")))
    response = client.post("/api/v1/message", json={"message": "hi", "wait": False},
                           headers={"X-API-Key": KEY})  # fmt: skip
    assert response.status_code == 200 and set(response.json) == {"context_id"}
