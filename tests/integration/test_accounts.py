"""Accounts against a real run_ui.py: an admin and two members, each seeing only their own
chats through the API, the page's routes and Socket.IO; keys act as their owner; a
disabled user's sessions and keys stop at once; invites, roles, deletion.

The test process's shared server with accounts serves the module (a start costs seconds;
tests/support/shared_accounts.py); each test makes the members it uses under names of its
own, so no test depends on another's accounts."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import threading
import uuid
import zipfile
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import requests
import socketio
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import GetTaskRequest, Message, Part, Role, SendMessageRequest
from a2a.utils.errors import TaskNotFoundError
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.support import members, shared_accounts
from tests.support.live_web import Browser, ack, close_socket, csrf_token, log_in
from tests.support.members import page
from tests.support.server_process import ServerProcess
from tests.support.shared_accounts import ADMIN, ADMIN_KEY, ADMIN_PASSWORD

_names = itertools.count(1)


@pytest.fixture(scope="module")
def cadre(accounts_server: ServerProcess) -> Iterator[ServerProcess]:
    with shared_accounts.for_module(accounts_server) as server:
        yield server


def api(cadre: ServerProcess, method: str, path: str, key: str = ADMIN_KEY,
        body: dict[str, Any] | None = None) -> requests.Response:  # fmt: skip
    return members.api(cadre, method, path, key, body)


def Member(cadre: ServerProcess, role: str = "member") -> members.Member:  # noqa: N802
    """A member the admin made, with a logged-in browser and a key of their own."""
    return members.Member(cadre, ADMIN_KEY, role)


def new_chat(cadre: ServerProcess, key: str) -> str:
    """A chat of the key's owner, made through the external API (no run: wait false)."""
    answer = api(cadre, "POST", "/message", key, {"message": "hello", "wait": False})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["context_id"])


def socket_of(http: requests.Session, cadre: ServerProcess) -> tuple[socketio.Client,
                                                                      threading.Event]:  # fmt: skip
    """A page's socket, and an event set when the server drops it."""
    dropped = threading.Event()
    client = members.socket_of(http, cadre)
    client.on("disconnect", lambda *_: dropped.set())
    return client, dropped


def test_each_member_sees_only_their_own_chats_everywhere(cadre):
    ann, bea = Member(cadre), Member(cadre)
    anns = new_chat(cadre, ann.key)
    beas = new_chat(cadre, bea.key)
    admins = new_chat(cadre, ADMIN_KEY)
    # The external API: the list, and another's chat id is a 404 (never a 403).
    listed = {c["id"] for c in api(cadre, "GET", "/chats", ann.key).json()["chats"]}
    assert anns in listed and beas not in listed and admins not in listed
    assert api(cadre, "GET", f"/chats/{beas}", ann.key).status_code == 404
    assert api(cadre, "POST", f"/chats/{beas}/stop", ann.key).status_code == 404
    assert (
        api(
            cadre, "POST", "/message", ann.key, {"message": "hi", "context_id": beas, "wait": False}
        ).status_code
        == 404
    )
    # Admins included: an admin manages accounts and reads nobody's chats.
    assert api(cadre, "GET", f"/chats/{anns}").status_code == 404
    assert anns not in {c["id"] for c in api(cadre, "GET", "/chats").json()["chats"]}
    # The page's routes: export, variables, search.
    assert page(ann.browser, cadre, "GET", f"/api/chats/{beas}/export").status_code == 404
    assert page(ann.browser, cadre, "GET", f"/api/chats/{beas}/variables").status_code == 404
    assert page(ann.browser, cadre, "GET", f"/api/chats/{anns}/variables").status_code == 200
    found = page(ann.browser, cadre, "GET", "/api/chats/search?q=hello").json()
    assert anns in str(found) and beas not in str(found)
    # Socket.IO: the list, and subscribing to another's chat.
    client, _ = socket_of(ann.browser, cadre)
    try:
        ids = {c["id"] for c in ack(client, "chats:list")["chats"]}
        assert anns in ids and beas not in ids and admins not in ids
        refused = ack(client, "chat:subscribe", {"chat_id": beas})
        assert "error" in refused and "no chat" in refused["error"]
    finally:
        close_socket(client)


def test_a_new_chat_is_news_to_its_owner_alone(cadre):
    ann, bea = Member(cadre), Member(cadre)
    heard: dict[str, list[str]] = {ann.name: [], bea.name: []}
    clients = []
    for member in (ann, bea):
        client, _ = socket_of(member.browser, cadre)
        client.on(
            "chats:delta", lambda data, who=member.name: heard[who].append(data["chat"]["id"])
        )
        clients.append(client)
    try:
        made = ack(clients[0], "chat:new", {})["chat"]["id"]
        done = threading.Event()
        for _ in range(50):
            if made in heard[ann.name]:
                break
            done.wait(0.1)
        assert made in heard[ann.name]
        assert made not in heard[bea.name]
    finally:
        for client in clients:
            close_socket(client)


def test_a_member_cannot_reach_what_is_an_admins(cadre):
    ann = Member(cadre)
    assert api(cadre, "GET", "/users", ann.key).status_code == 403
    assert (
        api(
            cadre, "POST", "/users", ann.key, {"name": "intruder", "password": "12345678"}
        ).status_code
        == 403
    )
    for path in ("/api/settings", "/api/audit", "/api/users", "/api/backup/parts",
                 "/api/mcp/servers", "/api/cluster"):  # fmt: skip
        answer = page(ann.browser, cadre, "GET", path)
        assert answer.status_code == 403, path
        assert "only an admin" in answer.json()["error"]
    assert page(ann.browser, cadre, "POST", "/api/settings", {"chat_model": "x"}).status_code == 403
    changed = page(ann.browser, cadre, "PATCH", f"/api/users/{ann.name}", {"role": "admin"})
    assert changed.status_code == 403
    # Another's account and keys are not theirs to see: a 404, as for nobody.
    assert page(ann.browser, cadre, "GET", f"/api/users/{ADMIN}/keys").status_code == 404


def test_keys_belong_to_their_owner(cadre):
    ann, bea = Member(cadre), Member(cadre)
    listed = page(ann.browser, cadre, "GET", f"/api/users/{ann.name}/keys").json()["keys"]
    assert [k["id"] for k in listed] == [ann.key_id]
    assert "key" not in listed[0] and "digest" not in listed[0]
    # Bea cannot revoke Ann's key (a 404); Ann can, and it stops at once.
    assert api(cadre, "DELETE", f"/keys/{ann.key_id}", bea.key).status_code == 404
    assert api(cadre, "DELETE", f"/keys/{ann.key_id}", ann.key).status_code == 200
    assert api(cadre, "GET", "/chats", ann.key).status_code == 401
    # An admin makes a key for a member through the API: it acts as the member.
    made = api(cadre, "POST", f"/users/{bea.name}/keys", body={"label": "for bea"})
    assert made.status_code == 201
    chat_id = new_chat(cadre, made.json()["key"])
    assert chat_id in {c["id"] for c in api(cadre, "GET", "/chats", bea.key).json()["chats"]}


def test_a_disabled_user_stops_at_once(cadre):
    ann = Member(cadre)
    client, dropped = socket_of(ann.browser, cadre)
    try:
        answer = api(cadre, "PATCH", f"/users/{ann.name}", body={"disabled": True})
        assert answer.status_code == 200 and answer.json()["user"]["disabled"] is True
        assert dropped.wait(10), "the disabled user's page stayed connected"
    finally:
        close_socket(client)
    assert page(ann.browser, cadre, "GET", "/api/chats/search?q=x").status_code == 401
    assert api(cadre, "GET", "/chats", ann.key).status_code == 401
    assert log_in(cadre, ann.name, ann.password).last.status_code == 401
    # Enabled again: the password works; the old session stays ended.
    assert api(cadre, "PATCH", f"/users/{ann.name}", body={"disabled": False}).status_code == 200
    assert page(ann.browser, cadre, "GET", "/api/chats/search?q=x").status_code == 401
    assert log_in(cadre, ann.name, ann.password).last.status_code == 200


def test_an_invite_link_lets_the_person_choose_a_password_once(cadre):
    name = f"invited{next(_names)}"
    made = api(cadre, "POST", "/users", body={"name": name, "invite": True})
    assert made.status_code == 201, made.text
    link = made.json()["invite"]["link"]
    token = link.split("#", 1)[1]
    assert link.startswith(f"{cadre.url}/invite#")
    # Not usable before: the account has no password.
    assert log_in(cadre, name, "").last.status_code == 401
    http = Browser()
    assert http.get(f"{cadre.url}/api/invite", params={"token": token}).json() == {"name": name}
    short = http.post(f"{cadre.url}/api/invite", json={"token": token, "password": "short"},
                      headers={"X-CSRF-Token": csrf_token(http, cadre)})  # fmt: skip
    assert short.status_code == 400 and "8 characters" in short.json()["error"]
    taken = http.post(f"{cadre.url}/api/invite", json={"token": token, "password": "a good one!"},
                      headers={"X-CSRF-Token": csrf_token(http, cadre)})  # fmt: skip
    assert taken.status_code == 200, taken.text
    assert page(http, cadre, "GET", "/api/chats/search?q=x").status_code == 200  # logged in
    again = Browser().post(f"{cadre.url}/api/invite", json={"token": token, "password": "x" * 9},
                           headers={"X-CSRF-Token": csrf_token(http, cadre)})  # fmt: skip
    assert again.status_code in (403, 404)
    assert log_in(cadre, name, "a good one!").last.status_code == 200


def test_a_member_changes_their_own_password(cadre):
    ann = Member(cadre)
    wrong = page(ann.browser, cadre, "PATCH", f"/api/users/{ann.name}",
                 {"password": "a new password", "current_password": "not it"})  # fmt: skip
    assert wrong.status_code == 400 and "current password" in wrong.json()["error"]
    right = page(ann.browser, cadre, "PATCH", f"/api/users/{ann.name}",
                 {"password": "a new password", "current_password": ann.password})  # fmt: skip
    assert right.status_code == 200
    assert page(ann.browser, cadre, "GET", "/api/chats/search?q=x").status_code == 200
    assert log_in(cadre, ann.name, ann.password).last.status_code == 401
    assert log_in(cadre, ann.name, "a new password").last.status_code == 200


def test_deleting_a_user_asks_what_becomes_of_their_data(cadre):
    ann, bea = Member(cadre), Member(cadre)
    anns = new_chat(cadre, ann.key)
    asked = api(cadre, "DELETE", f"/users/{ann.name}")
    assert asked.status_code == 400 and "hand_over" in asked.json()["error"]
    gone = api(cadre, "DELETE", f"/users/{ann.name}", body={"data": "hand_over", "to": bea.name})
    assert gone.status_code == 200, gone.text
    assert gone.json()["chats"] == 1
    assert anns in {c["id"] for c in api(cadre, "GET", "/chats", bea.key).json()["chats"]}
    assert api(cadre, "GET", "/chats", ann.key).status_code == 401
    assert log_in(cadre, ann.name, ann.password).last.status_code == 401
    names = {u["name"] for u in api(cadre, "GET", "/users").json()["users"]}
    assert ann.name not in names and bea.name in names
    # Deleted with their data: their chats go too.
    beas = new_chat(cadre, bea.key)
    assert api(cadre, "DELETE", f"/users/{bea.name}", body={"data": "delete"}).status_code == 200
    assert api(cadre, "GET", f"/chats/{beas}").status_code == 404
    assert not (cadre.usr_dir / "chats" / beas).exists()


async def a2a_task(cadre: ServerProcess, key: str, task_id: str = "") -> Any:
    """With `key`: `tasks/get` of `task_id` (None: not found), or a new task when none is
    named (one Cadre refuses at once, so no model is asked): its id."""
    async with httpx.AsyncClient(headers={"X-API-Key": key}, timeout=60) as http:
        client = await create_client(cadre.url, ClientConfig(httpx_client=http))
        try:
            if task_id:
                try:
                    return await client.get_task(GetTaskRequest(id=task_id))
                except TaskNotFoundError:  # another owner's is not found either
                    return None
            refused = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex,
                              parts=[Part(url="http://127.0.0.1:9/a.pdf")])  # fmt: skip
            events = [e async for e in client.send_message(SendMessageRequest(message=refused))]
            ids = {e.task.id or e.status_update.task_id for e in events} - {""}
            assert len(ids) == 1, events
            return ids.pop()
        finally:
            await client.close()


def test_a_deleted_users_a2a_tasks_go_with_them_or_to_their_heir(cadre):
    """A user made later under a deleted one's name read the deleted one's A2A tasks."""
    ann, bea, cal = Member(cadre), Member(cadre), Member(cadre)
    anns, cals = asyncio.run(a2a_task(cadre, ann.key)), asyncio.run(a2a_task(cadre, cal.key))
    assert asyncio.run(a2a_task(cadre, ann.key, anns)).id == anns
    assert asyncio.run(a2a_task(cadre, bea.key, anns)) is None  # another's: not found
    gone = api(cadre, "DELETE", f"/users/{ann.name}", body={"data": "delete"})
    assert gone.status_code == 200, gone.text
    again = members.Member(cadre, ADMIN_KEY, name=ann.name)  # the name free, taken anew
    assert asyncio.run(a2a_task(cadre, again.key, anns)) is None
    handed = api(cadre, "DELETE", f"/users/{cal.name}", body={"data": "hand_over", "to": bea.name})
    assert handed.status_code == 200, handed.text
    assert asyncio.run(a2a_task(cadre, bea.key, cals)).id == cals


def test_the_audit_log_names_each_account_change(cadre):
    ann = Member(cadre)
    api(cadre, "PATCH", f"/users/{ann.name}", body={"role": "admin"})
    admin = log_in(cadre, ADMIN, ADMIN_PASSWORD)
    events = page(admin, cadre, "GET", "/api/audit").json()["entries"]
    mine = [(e["event"], e["details"].get("name") or e["details"].get("owner")) for e in events]
    assert ("user_added", ann.name) in mine
    assert ("key_created", ann.name) in mine
    assert ("user_changed", ann.name) in mine


def test_each_person_exports_their_own_things(cadre):
    ann, bea = Member(cadre), Member(cadre)
    anns, beas = new_chat(cadre, ann.key), new_chat(cadre, bea.key)
    guide = cadre.usr_dir / "users" / ann.name / "knowledge" / "guide.md"
    guide.parent.mkdir(parents=True)
    guide.write_text("Ann's own guide")
    answer = api(cadre, "GET", "/export", ann.key)
    assert answer.status_code == 200
    assert answer.headers["Content-Disposition"].startswith(
        f"attachment; filename=cadre-{ann.name}-"
    )
    with zipfile.ZipFile(io.BytesIO(answer.content)) as zipped:
        names = set(zipped.namelist())
        assert f"chats/{anns}.json" in names and f"chats/{beas}.json" not in names
        assert zipped.read("files/knowledge/guide.md") == b"Ann's own guide"
        assert json.loads(zipped.read(f"chats/{anns}.json"))["chat"]["id"]
    with zipfile.ZipFile(io.BytesIO(api(cadre, "GET", "/export", bea.key).content)) as zipped:
        names = set(zipped.namelist())
        assert f"chats/{beas}.json" in names and f"chats/{anns}.json" not in names
        assert "files/knowledge/guide.md" not in names


async def test_mcp_tools_act_as_the_keys_owner(cadre):
    ann, bea = Member(cadre), Member(cadre)
    anns, beas = new_chat(cadre, ann.key), new_chat(cadre, bea.key)
    http = create_mcp_http_client(headers={"X-API-Key": ann.key})
    async with http, Client(streamable_http_client(f"{cadre.url}/mcp", http_client=http)) as client:
        listed = (await client.call_tool("list_chats", {})).structured_content
        ids = {chat["id"] for chat in listed["chats"]}
        assert anns in ids and beas not in ids
        own = await client.call_tool("get_chat", {"chat_id": anns})
        assert not own.is_error
        other = await client.call_tool("get_chat", {"chat_id": beas})
        assert other.is_error and "no chat" in str(other.content)
        stopped = await client.call_tool("stop_chat", {"chat_id": beas})
        assert stopped.is_error
