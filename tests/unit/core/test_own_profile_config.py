"""A profile of a person's own brings its settings.json to the agent that takes it, as a
shared one does: a subordinate, and Agent 0 handed the conversation (a handoff, a restore)."""

from __future__ import annotations

import json

from core.agent_config import chat_agent_config


def test_agent_0_handed_to_ones_own_profile_takes_its_settings(usr_dir):
    tuned = usr_dir / "users" / "ann" / "agents" / "tuned"
    tuned.mkdir(parents=True)
    (tuned / "agent.yaml").write_text("title: Tuned\ndescription: fewer calls\n")
    (tuned / "settings.json").write_text(json.dumps({"budget_calls": 9}))
    handed = chat_agent_config({}, "tuned", None, handed=True, owner="ann")
    assert handed.profile == "tuned" and handed.settings.budget_calls == 9
    others = chat_agent_config({}, "tuned", None, handed=True, owner="bea")
    assert others.settings.budget_calls == 0  # not Bea's: nothing of it reaches her agents
