"""Deleting an account through the real app (its users routes, a Flask test client): who may
be deleted (the settings' login may not, and the answer says what to do; the first admin
with no login in the settings may, like any other admin), and what becomes of what they
had in the install's own folders."""

from __future__ import annotations

import json
from typing import Any

import pytest

from server.security import auth
from tests.support.agents import answer
from tests.support.fake_llm import Reply, model_is

PASSWORD = "correct horse battery"
BEAS = "bea's own password"


@pytest.fixture
def locked(usr_dir):
    """A login in the settings: the first admin, "ada"."""
    stored = {"auth_login": "ada", "auth_password": auth.hash_password(PASSWORD)}
    (usr_dir / "settings.json").write_text(json.dumps(stored))


def logged_in(server, name: str, password: str):
    client = server.app.test_client()
    client.environ_base["HTTP_X_CSRF_TOKEN"] = client.get("/api/csrf").json["token"]
    assert client.post("/login", json={"login": name, "password": password}).status_code == 200
    client.environ_base["HTTP_X_CSRF_TOKEN"] = client.get("/api/csrf").json["token"]
    return client


def stored_users(usr_dir) -> dict[str, dict[str, Any]]:
    rows = json.loads((usr_dir / "users.json").read_text())["users"]
    return {row["name"]: row for row in rows}


def chat_ids(server, client, name: str) -> set[str]:
    """The chats `name` lists through the API, with a key made on their page."""
    key = client.post(f"/api/users/{name}/keys", json={"label": "test"}).json["key"]
    listed = server.app.test_client().get("/api/v1/chats", headers={"X-API-Key": key})
    assert listed.status_code == 200, listed.json
    return {c["id"] for c in listed.json["chats"]}


def clear_the_login(usr_dir) -> None:
    """The settings name no login any more (others hold accounts: ada stays, an admin)."""
    (usr_dir / "settings.json").write_text(json.dumps({"auth_login": "", "auth_password": ""}))


def test_the_settings_login_is_not_deleted_and_the_answer_says_what_to_do(locked, server):
    ada = logged_in(server, "ada", PASSWORD)
    made = ada.post("/api/users", json={"name": "bea", "password": BEAS, "role": "admin"})
    assert made.status_code == 201, made.json
    bea = logged_in(server, "bea", BEAS)
    refused = bea.delete("/api/users/ada", json={"data": "delete"})
    assert refused.status_code == 400
    words = refused.json["error"]
    # Why (the settings would make the account again) and the next step (clear the login).
    assert "login in Settings" in words and "again" in words
    assert "clear" in words and "then delete" in words
    assert "ada" in {u["name"] for u in bea.get("/api/users").json["users"]}


def test_with_no_login_in_the_settings_the_first_admin_is_deleted_like_any_admin(
    locked, server, usr_dir
):
    ada = logged_in(server, "ada", PASSWORD)
    assert ada.post("/api/users", json={"name": "bea", "password": BEAS,
                                        "role": "admin"}).status_code == 201  # fmt: skip
    chat = server.socketio.test_client(server.app, flask_test_client=ada)
    adas_chat = chat.emit("chat:new", {}, callback=True)["chat"]["id"]
    chat.disconnect()
    # Ada's own things, in the install's folders (her space is usr/ itself).
    (usr_dir / "knowledge").mkdir()
    (usr_dir / "knowledge" / "ada.md").write_text("ada's notes")
    (usr_dir / "my_settings.json").write_text('{"secrets": {"ADAS_TOKEN": "ada-only"}}')
    clear_the_login(usr_dir)
    bea = logged_in(server, "bea", BEAS)
    gone = bea.delete("/api/users/ada", json={"data": "hand_over", "to": "bea"})
    assert gone.status_code == 200, gone.json
    assert gone.json["chats"] == 1
    assert "ada" not in stored_users(usr_dir)
    assert adas_chat in chat_ids(server, bea, "bea")
    # Her things left usr/ for bea's folder; what usr/ holds for everyone stayed.
    handed = usr_dir / gone.json["files"]
    assert handed == usr_dir / "users" / "bea" / "handed-over" / "ada"
    assert (handed / "knowledge" / "ada.md").read_text() == "ada's notes"
    assert not (usr_dir / "knowledge" / "ada.md").exists()
    # Her own settings (her keys and secrets) go with her, to nobody (server/app.py's
    # leaving hook), from usr/ too: nobody given usr/ later finds them.
    assert not (usr_dir / "my_settings.json").exists()
    assert not (handed / "my_settings.json").exists()
    assert (usr_dir / "settings.json").exists() and (usr_dir / "users.json").exists()
    # Nobody takes the install's folders over: an admin made now has a space of their own.
    made = bea.post("/api/users", json={"name": "cy", "password": "cy's password",
                                        "role": "admin"})  # fmt: skip
    assert made.status_code == 201, made.json
    assert stored_users(usr_dir)["cy"]["space"] == "users/cy"


def test_a_login_set_to_anothers_name_in_the_settings_leaves_the_accounts_working(
    locked, server, usr_dir, caplog
):
    ada = logged_in(server, "ada", PASSWORD)
    assert ada.post("/api/users", json={"name": "bea", "password": BEAS}).status_code == 201
    clear_the_login(usr_dir)
    bea = logged_in(server, "bea", BEAS)
    # The settings edited to name bea, who has an account of her own (not the first admin).
    stored = {"auth_login": "bea", "auth_password": auth.hash_password("another password")}
    (usr_dir / "settings.json").write_text(json.dumps(stored))
    assert bea.get("/api/me").status_code == 200, bea.get("/api/me").json
    assert ada.get("/api/me").json["name"] == "ada"
    assert "another account's" in caplog.text


def test_a_handed_over_chat_and_task_find_their_project_in_the_heirs_folder(
    locked, server, usr_dir, llm
):
    """Ann leaves, her things go to Bea, who has a project of the same name: Ann's project
    comes to Bea's projects under a name of its own, with its memory, and Ann's chat and
    task in it name it so: the chat's next run has Ann's project, in Bea's folder."""
    llm.add_rule(model_is("util-model"), Reply("A chat"))
    ada = logged_in(server, "ada", PASSWORD)
    for name in ("ann", "bea"):
        made = ada.post("/api/users", json={"name": name, "password": f"{name}'s password"})
        assert made.status_code == 201, made.json
    ann = logged_in(server, "ann", "ann's password")
    bea = logged_in(server, "bea", "bea's password")
    for who, notes in ((ann, "ANN'S TRIP NOTES"), (bea, "BEA'S TRIP NOTES")):
        made = who.post("/api/projects", json={"name": "trip", "instructions": notes})
        assert made.status_code == 201, made.json
    anns_space, beas_space = usr_dir / "users" / "ann", usr_dir / "users" / "bea"
    (anns_space / "memory" / "trip").mkdir(parents=True)
    (anns_space / "memory" / "trip" / "kept.txt").write_text("the project's memory")
    socket = server.socketio.test_client(server.app, flask_test_client=ann)
    chat_id = socket.emit("chat:new", {"project": "trip"}, callback=True)["chat"]["id"]
    socket.disconnect()
    task = ann.post("/api/tasks", json={"name": "Packing", "prompt": "Pack.", "kind": "adhoc",
                                        "project": "trip"})  # fmt: skip
    assert task.status_code == 201, task.json

    gone = ada.delete("/api/users/ann", json={"data": "hand_over", "to": "bea"})
    assert gone.status_code == 200, gone.json
    # Bea's own project stays hers; Ann's is beside it, under a name of its own.
    projects = {p["name"]: p for p in bea.get("/api/projects").json["projects"]}
    assert projects["trip"]["instructions"] == "BEA'S TRIP NOTES"
    assert projects["trip-ann"]["instructions"] == "ANN'S TRIP NOTES"
    assert projects["trip-ann"]["chats"] == 1
    assert (beas_space / "memory" / "trip-ann" / "kept.txt").read_text() == "the project's memory"
    [handed_task] = bea.get("/api/tasks").json["tasks"]
    assert (handed_task["id"], handed_task["project"]) == (task.json["id"], "trip-ann")

    key = bea.post("/api/users/bea/keys", json={"label": "test"}).json["key"]
    api = server.app.test_client()
    llm.script(Reply(answer("Packed.")))
    sent = api.post("/api/v1/message", headers={"X-API-Key": key},
                    json={"message": "Go on.", "context_id": chat_id})  # fmt: skip
    assert sent.status_code == 200, sent.json
    assert sent.json["response"] == "Packed."
    system = str(llm.chat_requests("chat-model")[-1].body["messages"][0]["content"])
    assert "Project: trip-ann" in system and "ANN'S TRIP NOTES" in system
    assert "BEA'S TRIP NOTES" not in system
    # Its agents work in the project's folder in Bea's space, not in Ann's, which is gone.
    assert f"Your work folder in this project: {beas_space}/projects/trip-ann/work" in system
