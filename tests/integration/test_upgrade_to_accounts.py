"""A one-person install becomes a team server without losing anything: the usr/ folder of
the desktop mode (no login), served again with a login, is wholly the first admin's (every
chat, memory, project, work file and setting), and a member added afterwards sees none of it.
"""

from __future__ import annotations

import json

import requests

from memory.store import MemoryStore
from tests.support.live_web import csrf_token, live_server, log_in

KEY = "the-key-of-before"


def api(url: str, method: str, path: str, body: dict | None = None) -> requests.Response:
    return requests.request(method, f"{url}/api/v1{path}", json=body,
                            headers={"X-API-Key": KEY}, timeout=30)  # fmt: skip


def test_every_chat_memory_and_setting_of_a_desktop_install_is_the_first_admins(
    tmp_path, _fake_llm_server
):
    # Before: the desktop mode, as Cadre is used alone (no login, its API key set).
    before = live_server(tmp_path, _fake_llm_server.base_url, api_key=KEY)
    try:
        chats = [api(before.url, "POST", "/message", {"message": f"task {n}", "wait": False})
                 .json()["context_id"] for n in (1, 2)]  # fmt: skip
        assert api(before.url, "POST", "/projects", {"name": "trip"}).status_code in (200, 201)
        usr = before.usr_dir
    finally:
        before.stop()
    MemoryStore(usr / "memory" / "default" / "memory.db").save("Ada likes tea", tags=["t"])
    (usr / "workdir").mkdir(exist_ok=True)
    (usr / "workdir" / "notes.txt").write_text("written before accounts")
    # A setting of its own, in its settings.json (the environment sets only the models).
    (usr / "settings.json").write_text(json.dumps({"llm_retries": 7}))

    # After: the same usr/ served with a login: that login is the first admin.
    after = live_server(tmp_path, _fake_llm_server.base_url, api_key=KEY,
                        auth_login="boss", auth_password="the boss's password")  # fmt: skip
    try:
        admin = log_in(after, "boss", "the boss's password")
        assert admin.last.status_code == 200
        listed = {c["id"] for c in api(after.url, "GET", "/chats").json()["chats"]}
        assert set(chats) <= listed
        for chat_id in chats:
            assert api(after.url, "GET", f"/chats/{chat_id}").status_code == 200
        memories = admin.get(f"{after.url}/api/memory", timeout=30).json()["memories"]
        assert "Ada likes tea" in json.dumps(memories)
        projects = admin.get(f"{after.url}/api/projects", timeout=30).json()
        assert "trip" in json.dumps(projects)
        files = admin.get(f"{after.url}/api/files/list", params={"root": "work"}, timeout=30)
        assert "notes.txt" in files.text
        settings = admin.get(f"{after.url}/api/settings", timeout=30).json()
        assert settings["llm_retries"] == 7

        # A member added now sees none of it.
        made = api(after.url, "POST", "/users", {"name": "newcomer", "password": "a password!",
                                                  "role": "member"})  # fmt: skip
        assert made.status_code == 201, made.text
        member = log_in(after, "newcomer", "a password!")
        assert member.last.status_code == 200
        token = csrf_token(member, after)
        keyed = member.post(f"{after.url}/api/users/newcomer/keys", json={},
                            headers={"X-CSRF-Token": token}, timeout=30)  # fmt: skip
        theirs = {"X-API-Key": keyed.json()["key"]}
        seen = requests.get(f"{after.url}/api/v1/chats", headers=theirs, timeout=30).json()
        assert seen["chats"] == []
        memories = member.get(f"{after.url}/api/memory", timeout=30).json()["memories"]
        assert "Ada likes tea" not in json.dumps(memories)
        projects = member.get(f"{after.url}/api/projects", timeout=30).json()
        assert "trip" not in json.dumps(projects)
        files = member.get(f"{after.url}/api/files/list", params={"root": "work"}, timeout=30)
        assert "notes.txt" not in files.text
    finally:
        after.stop()
