"""A person's own settings (issue 35), against a real run_ui.py with an admin and members:
their own secrets, their own models where the admin allows it, their own remote MCP
servers and the admin's servers started per person with each one's secrets, through the
API and their agents' tools (the fake model server scripts the calls; a real MCP server
over streamable HTTP answers them).

The test process's shared server with accounts serves the module (tests/support/
shared_accounts.py), with the module's settings saved meanwhile; each test makes the members
it uses."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import shared_accounts
from tests.support.agents import answer, reply
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.live_web import log_in
from tests.support.mcp_servers import HttpMcpServer, servers_text, stdio_entry
from tests.support.members import Member, api, ask, page
from tests.support.server_process import ServerProcess
from tests.support.shared_accounts import ADMIN, ADMIN_KEY, ADMIN_PASSWORD

SERVER_SECRETS = {"SHARED": "shared-value-1", "ADMINS": "admins-only-value"}


@pytest.fixture(scope="module")
def mcp(tmp_path_factory) -> Iterator[HttpMcpServer]:
    server = HttpMcpServer(tmp_path_factory.mktemp("my-mcp")).wait_ready()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def cadre(accounts_server: ServerProcess, mcp: HttpMcpServer) -> Iterator[ServerProcess]:
    # The admin's "team" server starts once per person, their PERSON secret in its header.
    team = {"url": mcp.url, "headers": {"X-Person": "§§secret(PERSON)"}, "per_user": True}
    with shared_accounts.for_module(accounts_server, secrets=SERVER_SECRETS,
                                    member_secrets=["SHARED"], mcp_servers=servers_text(team=team),
                                    llm_retries=0) as server:  # fmt: skip
        yield server


@pytest.fixture
def fake(cadre: ServerProcess, llm: FakeLLMServer) -> FakeLLMServer:
    llm.add_rule(model_is("util-model"), Reply("Named"))
    return llm


def mine(cadre: ServerProcess, member: Member, changes: dict[str, Any] | None = None):
    """GET (or PATCH with `changes`) the member's own settings through the API."""
    if changes is None:
        return api(cadre, "GET", "/my/settings", member.key)
    return api(cadre, "PATCH", "/my/settings", member.key, changes)


def told_after(fake: FakeLLMServer, before: int, model: str = "chat-model") -> list[str]:
    return [str(r.messages[-1]["content"]) for r in fake.chat_requests(model)[before:]]


def test_own_secrets_reach_only_their_own_agents(cadre, fake):
    ann, bob = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    saved = mine(cadre, ann, {"secrets": {"TOKEN": "anns-token-value"}})
    assert saved.status_code == 200, saved.text
    assert saved.json()["values"]["secrets"] == {"TOKEN": "***"}  # never shown in clear
    assert saved.json()["server_secrets"] == ["SHARED"]  # ADMINS is not given to members
    stored = cadre.usr_dir / "users" / ann.name / "my_settings.json"
    assert json.loads(stored.read_text())["secrets"] == {"TOKEN": "anns-token-value"}
    assert stored.stat().st_mode & 0o777 == 0o600
    # "***" sent back keeps the value; a new secret beside it is added.
    again = mine(cadre, ann, {"secrets": {"TOKEN": "***", "OTHER": "other-value"}})
    assert again.status_code == 200, again.text
    assert json.loads(stored.read_text())["secrets"]["TOKEN"] == "anns-token-value"

    content = "§§secret(TOKEN) §§secret(SHARED)"
    fake.script(Reply(reply("text_editor:write", path="token.txt", content=content)),
                Reply(answer("Written.")))  # fmt: skip
    ask(cadre, ann.key, "Write the token down")
    written = cadre.usr_dir / "users" / ann.name / "workdir" / "token.txt"
    assert written.read_text() == "anns-token-value shared-value-1"

    before = len(fake.chat_requests("chat-model"))
    fake.script(Reply(reply("text_editor:write", path="token.txt", content=content)),
                Reply(reply("text_editor:write", path="admins.txt", content="§§secret(ADMINS)")),
                Reply(answer("No token here.")))  # fmt: skip
    chat = ask(cadre, bob.key, "Write the token down")
    told = told_after(fake, before)
    assert "There is no secret named TOKEN" in told[1] and "SHARED" in told[1]
    assert "There is no secret named ADMINS" in told[2]
    bobs = cadre.usr_dir / "users" / bob.name / "workdir"
    assert not (bobs / "token.txt").exists() and not (bobs / "admins.txt").exists()
    saved_chat = (cadre.usr_dir / "chats" / chat["context_id"] / "chat.json").read_text()
    assert "anns-token-value" not in saved_chat


def test_own_models_only_where_the_admin_allows_it(cadre, fake):
    ann, bob = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    refused = mine(cadre, ann, {"chat_model": "openai/anns-model", "chat_api_key": "ann-key-1"})
    assert refused.status_code == 403
    assert "has not let members choose their own models" in refused.json()["error"]
    admin = log_in(cadre, ADMIN, ADMIN_PASSWORD)
    allowed = page(admin, cadre, "POST", "/api/settings", {"member_models": True})
    assert allowed.status_code == 200, allowed.text
    try:
        saved = mine(cadre, ann, {"chat_model": "openai/anns-model", "chat_api_key": "ann-key-1"})
        assert saved.status_code == 200, saved.text
        assert saved.json()["values"]["chat_api_key"] == "***"
        assert saved.json()["models_allowed"] is True
        fake.add_rule(model_is("anns-model"), Reply(answer("From Ann's own model.")))
        assert ask(cadre, ann.key, "Hello")["response"] == "From Ann's own model."
        used = fake.chat_requests("anns-model")[-1]
        assert used.headers.get("authorization") == "Bearer ann-key-1"
        before = len(fake.chat_requests("anns-model"))
        fake.script(Reply(answer("From the server's model.")))
        assert ask(cadre, bob.key, "Hello")["response"] == "From the server's model."
        assert len(fake.chat_requests("anns-model")) == before  # Bob's went to the server's
        # A provider's address is held to where their agents may reach: with private
        # addresses refused, theirs is refused at save, in words, and nothing changes.
        refuse = page(admin, cadre, "POST", "/api/settings", {"outbound_private": "refuse"})
        assert refuse.status_code == 200, refuse.text
        private = mine(cadre, ann, {"chat_api_base": "http://127.0.0.1:9/v1"})
        assert private.status_code == 400
        assert "a local or private address" in private.json()["error"]
        assert mine(cadre, ann).json()["values"]["chat_api_base"] == ""
    finally:
        page(admin, cadre, "POST", "/api/settings",
             {"member_models": False, "outbound_private": "auto"})  # fmt: skip
    # Off again: Ann's saved choice no longer applies.
    fake.script(Reply(answer("Back on the server's model.")))
    assert ask(cadre, ann.key, "Hello again")["response"] == "Back on the server's model."


def wait_ready(cadre: ServerProcess, member: Member, names: set[str]) -> list[dict[str, Any]]:
    """The member's own MCP servers once every one of `names` is ready."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = mine(cadre, member).json()["mcp_status"]
        if names <= {s["name"] for s in found if s["state"] == "ready"}:
            return list(found)
        time.sleep(0.2)
    raise AssertionError(f"{names} not ready: {found}")


def test_own_mcp_servers_and_the_admins_per_person_ones(cadre, fake, mcp, tmp_path):
    ann, bob = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    local = servers_text(mine=stdio_entry(tmp_path / "pid"))
    refused = mine(cadre, ann, {"mcp_servers": local})
    assert refused.status_code == 400
    assert "only the admin can add a server that runs a command" in refused.json()["error"]
    taken = mine(cadre, ann, {"mcp_servers": servers_text(team={"url": mcp.url})})
    assert taken.status_code == 400 and "named 'team' already" in taken.json()["error"]

    saved = mine(cadre, ann, {"secrets": {"PERSON": "ann"},
                              "mcp_servers": servers_text(mine={"url": mcp.url})})  # fmt: skip
    assert saved.status_code == 200, saved.text
    assert mine(cadre, bob, {"secrets": {"PERSON": "bob"}}).status_code == 200
    wait_ready(cadre, ann, {"mine", "team"})
    assert {s["name"] for s in wait_ready(cadre, bob, {"team"})} == {"team"}

    before = len(fake.chat_requests("chat-model"))
    fake.script(Reply(reply("team.who")), Reply(reply("mine.add", a=2, b=3)),
                Reply(answer("Done.")))  # fmt: skip
    ask(cadre, ann.key, "Who am I, and what is 2 + 3?")
    told = told_after(fake, before)
    assert "you are ann" in told[1] and "5" in told[2]

    before = len(fake.chat_requests("chat-model"))
    fake.script(Reply(reply("team.who")), Reply(reply("mine.add", a=2, b=3)),
                Reply(answer("Done.")))  # fmt: skip
    ask(cadre, bob.key, "Who am I, and what is 2 + 3?")
    told = told_after(fake, before)
    assert "you are bob" in told[1]
    assert "mine.add" in told[2] and "5" not in told[2]  # Ann's server is not Bob's


def test_the_first_admins_settings_are_the_servers(cadre):
    mine_of_admin = api(cadre, "GET", "/my/settings", ADMIN_KEY)
    assert mine_of_admin.status_code == 409
    assert "Settings page" in mine_of_admin.json()["error"]


def test_wrong_values_are_refused_with_the_reason_and_keep_what_was_saved(cadre):
    ann = Member(cadre, ADMIN_KEY)
    assert mine(cadre, ann, {"secrets": {"KEY": "kept-value"}}).status_code == 200
    for changes, words in (
        ({"secrets": {"bad name": "x"}}, "is not a secret's name"),
        ({"work_dir": "/"}, "not a setting of yours"),
        ({"mcp_servers": "{not json"}, "not valid JSON"),
        ({"secrets": ["KEY"]}, "secrets: Input should be a valid dictionary"),
    ):
        refused = mine(cadre, ann, changes)
        assert refused.status_code in (400, 403), refused.text
        assert words in refused.json()["error"], (changes, refused.json())
    stored = cadre.usr_dir / "users" / ann.name / "my_settings.json"
    assert json.loads(stored.read_text())["secrets"] == {"KEY": "kept-value"}


def test_a_leaving_persons_own_settings_are_never_handed_over(cadre):
    ann, bob = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    assert mine(cadre, ann, {"secrets": {"KEY": "anns-leaving-secret"}}).status_code == 200
    gone = api(cadre, "DELETE", f"/users/{ann.name}", ADMIN_KEY,
               {"data": "hand_over", "to": bob.name})  # fmt: skip
    assert gone.status_code == 200, gone.text
    bobs = cadre.usr_dir / "users" / bob.name
    held = [p for p in bobs.rglob("*") if p.is_file() and b"anns-leaving-secret" in p.read_bytes()]
    assert held == []
    assert not (cadre.usr_dir / "users" / ann.name / "my_settings.json").exists()


def test_a_server_wanting_a_secret_they_lack_says_so(cadre):
    """The admin's per-person "team" server names PERSON: without it, it is not started
    for them, and their settings say why and what to do."""
    cal = Member(cadre, ADMIN_KEY)
    shown = mine(cadre, cal).json()["mcp_status"]
    team = next(s for s in shown if s["name"] == "team")
    assert team["state"] == "failed"
    assert team["error"] == "needs your secret PERSON: add it under Secrets"
