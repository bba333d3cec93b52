"""A chat's record crosses both ways: every saved field is written by `snapshot` and read
back by `restore` (core/chat_record.py), and a restore that finds no working agent says so."""

from __future__ import annotations

import logging

from pydantic import BaseModel

from core import chat_record
from core.budget import Limits
from core.chat_record import (
    AgentRecord,
    ChatFile,
    HandoverRecord,
    HeldRecord,
    MessageRecord,
    ParentLink,
    ScopeRecord,
)
from core.prompt.history import History
from initialize import restore_chat
from models.llm import Usage
from profiles.project_store import create_project


def history(*texts: str) -> dict:
    kept = History()
    for number, text in enumerate(texts):
        kept.add_message(ai=number % 2 == 1, content=text)
    return kept.to_dict()


def usage(tokens: int) -> dict[str, float]:
    return Usage(prompt_tokens=tokens, completion_tokens=3, calls=2, cost=0.25).to_dict()


#: A1.2's browser:open, held for an answer when the chat was saved.
HELD_ITEM = {
    "no": 0,
    "id": "i-held",
    "type": "browser",
    "heading": "A1.2: Opening a page",
    "kvps": {"url": "https://example.org", "approval": "pending", "approval_tool": "browser:open"},
    "agentno": 1,
    "agent": "A1.2",
}


#: One message sent to two agents at once: one message again when read back.
SENT = MessageRecord(message="mind the dates", attachments=["/files/a.png"],
                     system_message=["Sent from the phone."], id="m-1")  # fmt: skip


def sample() -> ChatFile:
    """A chat whose every saved field (of the chat, each agent, each part) is set, not left
    at its default (`test_the_sample_sets_every_saved_field` holds it so for new fields),
    each in the form `snapshot` writes it."""
    return ChatFile(
        id="c-full",
        name="Trip plans",
        created_at=1_700_000_000.0,
        last_message=1_700_000_500.0,
        project="trip",
        owner="ada",
        paused=True,
        running=True,
        working_agent=1,
        home_profile="agent0",
        busy=[0, 3],
        log={"guid": "g-1", "version": 4, "items": [HELD_ITEM]},
        usage=usage(40),
        variables={"customer": "ACME"},
        approvals=1,
        parent=ParentLink(id="c-parent", at=3),
        allowed_tools=["text_editor:write"],
        replay_of={"id": "0123456789abcdef", "tools": "rerun", "on_difference": "stop"},
        agents=[
            AgentRecord(number=0, profile="developer", overrides={"llm_retries": 5},
                        data={"notes": ["a"]}, history=history("Plan it.", "On it."),
                        usage=usage(20), intervention=SENT, nudged=True,
                        last_reply="On it.", file_reads={"/work/plan.md": "d1"}),
            AgentRecord(number=1, profile="researcher", superior=0, retired=True,
                        task="The old task.", history=history("The old task."),
                        usage=usage(9)),
            AgentRecord(number=1, name="A1.1", profile="researcher", superior=0,
                        task="Find flights.", intervention=SENT,
                        history=history("Find flights."), usage=usage(7),
                        delegation_budgets=[
                            ScopeRecord(key=0, name="budget of A1.1",
                                        limits=Limits(tokens=900), spent=usage(7),
                                        seconds=12.5, grace=1),
                        ],
                        handed=HandoverRecord(text="None left.", hint="ask again",
                                              failed=True)),
            AgentRecord(number=1, name="A1.2", profile="researcher", superior=0,
                        task="Find hotels.", history=history("Find hotels."),
                        usage=usage(5),
                        delegation_budgets=[
                            ScopeRecord(key=0, name="budget of A1.1",
                                        limits=Limits(tokens=900), spent=usage(7),
                                        seconds=12.5, grace=1),
                            ScopeRecord(key=1, name="budget of A1.2",
                                        limits=Limits(calls=4), spent=usage(5),
                                        seconds=3.0),
                        ],
                        held=HeldRecord(id="i-held", tool="browser:open",
                                        args={"url": "https://example.org"},
                                        names=["browser:open", "browser", "*"],
                                        call="browser", method="open")),
        ],
    )  # fmt: skip


def unset_fields(model: type[BaseModel], records: list[BaseModel]) -> list[str]:
    """The fields of `model` that every one of `records` leaves at its default."""
    return [
        name
        for name, field in model.model_fields.items()
        if not field.is_required()
        and all(getattr(r, name) == field.get_default(call_default_factory=True) for r in records)
    ]


def test_the_sample_sets_every_saved_field():
    """A new field of a record fails here until the sample gives it a value, and so the
    round trip below holds its snapshot and its restore to it."""
    chat = sample()
    agents = chat.agents
    scopes = [s for a in agents for s in a.delegation_budgets]
    assert unset_fields(ChatFile, [chat]) == ["version"]  # the format's, not the chat's
    assert unset_fields(AgentRecord, agents) == []
    assert unset_fields(MessageRecord, [a.intervention for a in agents if a.intervention]) == []
    assert unset_fields(ScopeRecord, scopes) == []
    assert unset_fields(HandoverRecord, [a.handed for a in agents if a.handed]) == []
    assert unset_fields(HeldRecord, [a.held for a in agents if a.held]) == []


def test_every_saved_field_is_restored_and_snapshot_again_unchanged():
    create_project("trip", {})
    saved = sample()

    restored = restore_chat(saved, None)
    again = chat_record.snapshot(restored)

    # What a restore adds, on purpose: the chat says it was interrupted (and marks the cut).
    assert again.log["guid"] == "g-1" and again.log["version"] > 4
    # A1.2's held call is held again, its item still asking (nothing of it was cut).
    headings = [item["heading"] for item in again.log["items"]]
    assert headings == ["A1.2: Opening a page", "Interrupted"]
    assert again.log["items"][0]["kvps"]["approval"] == "pending"
    assert [h.view() for h in restored.approvals.held()] == [{
        "id": "i-held", "agent": "A1.2", "tool": "browser:open",
        "args": {"url": "https://example.org"}}]  # fmt: skip
    # Budgets run on from where they were: seconds are compared apart, within the test's time.
    for before, after in zip(saved.agents, again.agents, strict=True):
        for old, new in zip(before.delegation_budgets, after.delegation_budgets, strict=True):
            assert old.seconds <= new.seconds < old.seconds + 5
            new.seconds = old.seconds
    assert again.model_dump(exclude={"log"}) == saved.model_dump(exclude={"log"})
    a0, _, a11, a12 = restored.agents_on_record()
    assert a0[0].intervention is a11[0].intervention  # one message, as it was sent
    assert a12[0].delegation_budgets[0] is a11[0].delegation_budgets[0]  # one budget


def test_a_chat_whose_working_agent_is_gone_resumes_at_agent_0(caplog):
    """A file naming a working agent it does not hold (edited by hand, say) still opens."""
    saved = ChatFile(id="c-lost", created_at=1.0, running=True, working_agent=7,
                     agents=[AgentRecord(number=0, profile="agent0")])  # fmt: skip

    with caplog.at_level(logging.WARNING):
        restored = restore_chat(saved, None)

    assert restored.interrupted and restored.working_agent is restored.agent0
    assert "chat c-lost: working agent 7 is missing; resuming at Agent 0" in caplog.text
