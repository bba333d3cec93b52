"""Who may call whom: agent.yaml `subordinates`, a project's restriction, one rule."""

from __future__ import annotations

from profiles import catalog
from tests.support.agents import make_profile, project_settings

AGENT0 = "title: Agent 0\nsubordinate: false\n"


def test_without_a_list_every_offered_profile_may_be_called(usr_dir):
    everyone = ["default", "developer", "panel", "researcher"]
    assert catalog.allowed_subordinates("agent0", None) == everyone
    assert catalog.allowed_subordinates("researcher", None) == everyone
    # A profile nobody knows has no rule of its own either.
    assert catalog.allowed_subordinates("ghost", None) == everyone


def test_an_agent_yaml_list_narrows_and_never_adds(usr_dir):
    make_profile(usr_dir, "agent0", yaml=AGENT0 + "subordinates: [researcher, ghost, agent0]\n")
    found = catalog.discover_profiles()["agent0"]
    assert found.subordinates == ("researcher", "ghost", "agent0") and found.available
    # `ghost` does not exist and `agent0` is no subordinate profile: neither is added.
    assert catalog.allowed_subordinates("agent0", None) == ["researcher"]
    assert catalog.allowed_subordinates("developer", None) == ["default", "developer", "panel",
                                                               "researcher"]  # fmt: skip
    make_profile(usr_dir, "developer", yaml="title: Developer\nsubordinates: []\n")
    assert catalog.allowed_subordinates("developer", None) == []


def test_a_project_restricts_further(usr_dir):
    make_profile(usr_dir, "agent0", yaml=AGENT0 + "subordinates: [researcher, developer]\n")
    project_settings(usr_dir, "lab", {"subordinates": {"agent0": ["developer", "default"]}})
    assert catalog.allowed_subordinates("agent0", "lab") == ["developer"]
    assert catalog.allowed_subordinates("agent0", None) == ["developer", "researcher"]
    # Another profile is untouched by the project's rule for agent0.
    assert catalog.allowed_subordinates("researcher", "lab") == ["default", "developer", "panel",
                                                                "researcher"]  # fmt: skip
    # A disabled profile is not allowed, whatever a list says.
    project_settings(usr_dir, "lab", {"disabled_agents": ["developer"]})
    assert catalog.allowed_subordinates("agent0", "lab") == ["researcher"]


def test_a_list_that_is_not_a_list_of_names_makes_the_profile_unusable(usr_dir):
    make_profile(usr_dir, "picky", yaml="title: Picky\nsubordinates: researcher\n")
    found = catalog.discover_profiles()["picky"]
    assert not found.available
    assert found.error == "agent.yaml: subordinates must be a list of profile names"
    # Its broken list restricts nothing: it cannot be used, and others are unaffected.
    assert "picky" not in catalog.allowed_subordinates("agent0", None)
