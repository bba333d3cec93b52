"""Skills through the loop: listed in the system prompt, loaded and read on demand.

What the model is shown is checked where it arrives: in the requests the fake
model server received.
"""

from __future__ import annotations

import os

from core.agent_types import UserMessage
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply
from tests.support.skill_files import make_skill

BODY = "1. Count the rows first.\n2. Quote the total with its unit."


def system_prompt(request) -> str:
    return request.body["messages"][0]["content"]


def last_message(request) -> str:
    return request.body["messages"][-1]["content"]


def test_listed_in_the_prompt_then_loaded_and_read_on_demand(make_context, llm, usr_dir):
    root = make_skill(
        usr_dir / "skills", "ledger-check", "Check a ledger's totals. Use for ledgers.",
        body=BODY, files={"scripts/total.py": "print('sum')\n", "notes/units.md": "Use EUR."},
    )  # fmt: skip
    llm.script(
        Reply(reply("skills:load", name="ledger-check")),
        Reply(reply("skills:read", name="ledger-check", path="notes/units.md")),
        Reply(reply("skills:read", name="ledger-check", path="../../settings.json")),
        Reply(reply("skills:load", name="ledger")),
        Reply(reply("skills:list")),
        Reply(answer("done")),
    )
    context = make_context()
    context.communicate(UserMessage("check my ledger")).result(30)
    first, loaded, read, refused, unknown, listed = llm.chat_requests()
    prompt = system_prompt(first)
    # The prompt names the skill and says what it is for; its instructions wait for a load.
    assert "- `ledger-check`: Check a ledger's totals. Use for ledgers." in prompt
    assert "- `report-writing`:" in prompt and "- `csv-data`:" in prompt  # the shipped ones
    assert "Count the rows first" not in prompt
    assert BODY in last_message(loaded) and str(root) in last_message(loaded)
    assert "scripts/total.py (13 bytes)" in last_message(loaded)
    assert "Use EUR." in last_message(read)
    assert "path refused" in last_message(refused) and "'..'" in last_message(refused)
    assert 'There is no skill named "ledger"' in last_message(unknown)
    assert "ledger-check" in last_message(unknown)
    assert "- `ledger-check`: Check a ledger's totals." in last_message(listed)


def test_the_prompt_is_rebuilt_when_skills_change(make_context, llm, usr_dir):
    context = make_context()
    llm.script(Reply(answer("one")), Reply(answer("two")), Reply(answer("three")))
    context.communicate(UserMessage("first")).result(30)
    root = make_skill(usr_dir / "skills", "late-arrival", "Added while the chat was open.")
    context.communicate(UserMessage("second")).result(30)
    (root / "SKILL.md").write_text("not a skill any more")
    context.communicate(UserMessage("third")).result(30)
    before, after, broken = (system_prompt(r) for r in llm.chat_requests())
    assert "late-arrival" not in before
    assert "- `late-arrival`: Added while the chat was open." in after
    assert "late-arrival" not in broken and "- `csv-data`:" in broken


def test_an_unusable_skill_is_a_repairable_error_never_a_failed_run(make_context, llm, usr_dir):
    make_skill(usr_dir / "skills", "half-done", text="---\nname: half-done\n---\nno description")
    llm.script(Reply(reply("skills:load", name="half-done")), Reply(answer("did it without")))
    context = make_context()
    assert context.communicate(UserMessage("go")).result(30) == "did it without"
    said = last_message(llm.chat_requests()[1])
    assert 'Skill "half-done" cannot be used' in said and "has no description" in said


def test_reading_a_hard_link_in_a_skill_is_refused(make_context, llm, usr_dir, tmp_path):
    """A hard link has no path to check: the skill's `notes.md` would be the file outside."""
    (tmp_path / "outside.txt").write_text("CANARY outside the skill")
    root = make_skill(usr_dir / "skills", "linked", "Has a hard link.", files={"ok.md": "fine"})
    os.link(tmp_path / "outside.txt", root / "notes.md")
    llm.script(
        Reply(reply("skills:read", name="linked", path="notes.md")),
        Reply(reply("skills:read", name="linked", path="ok.md")),
        Reply(answer("done")),
    )
    make_context().communicate(UserMessage("read the notes")).result(30)
    refused, read = (last_message(r) for r in llm.chat_requests()[1:])
    assert "path refused" in refused and "notes.md is a hard link" in refused
    assert "fine" in read
    assert all("CANARY" not in str(r.body) for r in llm.chat_requests())
