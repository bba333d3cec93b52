"""Chat files and agents' links: shared budgets, migrated chains, malformed links."""

from __future__ import annotations

import json

import pytest

from core import chat_migrations, chat_record
from core.agent import Agent
from core.budget import Grace, Limits, Scope
from core.chat import Chat
from initialize import agent_config, restore_chat
from models.llm import Usage
from store import persist_chat


def scope_fields(scope) -> tuple:
    return (scope.name, scope.limits, scope.spent, scope.grace)


def test_a_budget_shared_down_the_chain_is_shared_again_after_a_restore():
    """A2 works under A1's delegated budget and its own: A1's is one object for both."""
    context = Chat(agent_config())
    a0 = context.agent0
    a1, a2 = Agent(1, a0.config, context), Agent(2, a0.config, context)
    a0.link_subordinate(a1)
    a1.link_subordinate(a2)
    outer = Scope("budget of A1", Limits(tokens=1000), grace=Grace.WARNED)
    a1.delegation_budgets = [outer]
    a2.delegation_budgets = [outer, Scope("budget of A2", Limits(calls=3))]
    a2.record_usage(Usage(prompt_tokens=10, completion_tokens=2, calls=1))

    text = chat_record.snapshot(context).model_dump_json()
    restored = restore_chat(persist_chat.parse(text), None)

    r0, r1, r2 = restored.agents()
    assert r2.delegation_budgets[0] is r1.delegation_budgets[0]
    assert [scope_fields(s) for s in r2.delegation_budgets] == [
        scope_fields(s) for s in a2.delegation_budgets
    ]
    r2.record_usage(Usage(prompt_tokens=5, calls=1))
    assert r1.delegation_budgets[0].spent.total_tokens == 17  # A1 sees what A2 spends


def test_a_version_2_chain_is_read_with_its_links_task_and_message():
    v2 = {
        "version": 2, "id": "c2", "created_at": 1.0,
        "agents": [
            {"number": 1, "profile": "researcher", "data": {"delegated_task": "Find X.", "k": 1},
             "intervention": "faster please"},
            {"number": 0, "profile": "agent0"},
        ],
    }  # fmt: skip
    chat = persist_chat.parse(json.dumps(v2))
    restored = restore_chat(chat, None)
    r0, r1 = restored.agents()
    assert (r1.superior, r0.subordinate, r1.task, r1.data) == (r0, r1, "Find X.", {"k": 1})
    assert r1.intervention.message == "faster please" and r1.intervention.attachments == []


@pytest.mark.parametrize(
    ("agents", "reason"),
    [
        ([{"number": 1, "profile": "p"}], "must be Agent 0"),
        ([{"number": 0, "profile": "p"}, {"number": 1, "profile": "p"}],
         "agent 1 must name a superior"),
        ([{"number": 0, "profile": "p"}, {"number": 1, "profile": "p", "superior": 1}],
         "name a superior saved before it"),
    ],
)  # fmt: skip
def test_links_that_do_not_form_a_chain_are_refused_clearly(agents, reason):
    document = {"version": chat_migrations.VERSION, "id": "x", "created_at": 1, "agents": agents}
    with pytest.raises(ValueError, match=reason):
        persist_chat.parse(json.dumps(document))
