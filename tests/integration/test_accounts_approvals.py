"""Held tool calls and accounts, on a real run_ui.py with accounts (the shared server of
tests/support/shared_accounts.py): a person answers only the calls of chats they may see,
and only an admin's answer may save a rule."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.support import shared_accounts
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.members import Member, api
from tests.support.server_process import ServerProcess
from tests.support.shared_accounts import ADMIN_KEY

RULES = [{"tool": "text_editor:write", "rule": "ask"}]


@pytest.fixture(scope="module")
def cadre(accounts_server: ServerProcess) -> Iterator[ServerProcess]:
    with shared_accounts.for_module(accounts_server, tool_rules=RULES) as server:
        yield server


@pytest.fixture
def fake(_fake_llm_server: FakeLLMServer) -> FakeLLMServer:
    _fake_llm_server.reset()
    _fake_llm_server.add_rule(model_is("util-model"), Reply("A chat"))  # naming chats
    return _fake_llm_server


def test_only_the_chat_s_owner_answers_its_held_call(cadre, fake):
    ann, bob = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    fake.script(Reply(reply("text_editor:write", path="ann.txt", content="ann's")),
                Reply(answer("Written.")))  # fmt: skip
    sent = api(cadre, "POST", "/message", ann.key, {"message": "write", "wait": False})
    assert sent.status_code == 200, sent.text
    chat_id = sent.json()["context_id"]
    view = lambda key: api(cadre, "GET", f"/chats/{chat_id}", key)  # noqa: E731
    [held] = wait_for(lambda: view(ann.key).json()["approvals"], what="ann's held call")

    # Bob sees no such chat, and cannot answer its call: the same 404 as for none.
    assert view(bob.key).status_code == 404
    refused = api(cadre, "POST", f"/approvals/{held['id']}", bob.key, {"decision": "allow"})
    assert refused.status_code == 404 and "no tool call waits" in refused.json()["error"]
    # Ann may allow it, but not save a rule (the server's settings are the admin's).
    as_rule = {"decision": "allow", "always": "rule"}
    kept = api(cadre, "POST", f"/approvals/{held['id']}", ann.key, as_rule)
    assert kept.status_code == 400 and "only an admin may save a tool rule" in kept.json()["error"]
    assert view(ann.key).json()["approvals"] == [held]  # nothing was answered
    assert api(cadre, "POST", f"/approvals/{held['id']}", ann.key,
               {"decision": "allow"}).status_code == 200  # fmt: skip
    wait_for(lambda: not view(ann.key).json()["running"], timeout=30, what="the run's end")
    stored = json.loads((cadre.usr_dir / "settings.json").read_text())["tool_rules"]
    assert stored == RULES
