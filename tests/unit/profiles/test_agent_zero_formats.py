"""Agent Zero's profile formats: agent.json, lenient includes, the status of a profile."""

from __future__ import annotations

import logging

import pytest

from helpers.errors import PromptError
from profiles.catalog import discover_profiles
from profiles.prompts import PromptLoader
from profiles.status import profile_status
from tests.support import agent_zero_profiles as a0


def test_an_include_no_folder_has_renders_as_nothing_with_one_warning(tmp_path, caplog):
    (tmp_path / "t.md").write_text('before\n{{ include "gone.md" }}\nafter\n')
    loader = PromptLoader([tmp_path], missing_includes="warn")
    with caplog.at_level(logging.WARNING, logger="profiles.prompts"):
        assert loader.render("t.md") == "before\n\nafter"
        assert loader.render("t.md") == "before\n\nafter"
    warned = [r.getMessage() for r in caplog.records if "gone.md" in r.getMessage()]
    assert len(warned) == 1 and "'t.md'" in warned[0] and "renders as nothing" in warned[0]
    with pytest.raises(PromptError, match="'gone.md' not found"):  # a strict loader still says
        PromptLoader([tmp_path]).render("t.md")


def test_agent_json_is_read_like_agent_yaml_and_a_bad_one_says_why(usr_dir):
    a0.write_json_profile(usr_dir)
    broken = usr_dir / "agents" / "broken"
    broken.mkdir(parents=True)
    (broken / "agent.json").write_text('{"title": "Broken",}')
    found = discover_profiles()
    assert found["analyst"].available and found["analyst"].title == "Analyst"
    assert found["analyst"].context == "Use for analysing data sets."
    assert found["broken"].error.startswith("agent.json is not valid JSON (line 1)")


def test_status_names_each_files_source_and_the_missing_includes(usr_dir):
    a0.write_agent0(usr_dir)
    status = profile_status("agent0")
    origins = {file.path: file.origin for file in status.files}
    assert origins == {
        "agent.json": "user",  # it wins over the shipped agent.yaml
        "prompts/agent.system.main.role.md": "user",
        "prompts/agent.system.tool.response.md": "user",
    }
    assert status.warnings == [
        "agent.system.tool.response.md includes agent.system.response_tool_tips.md, "
        "which no layer has: it renders as nothing"
    ]
    assert profile_status("developer").files[0].origin == "shipped"


def test_an_older_agent_zero_profile_with_only_context_md_is_a_profile(usr_dir):
    """Agent Zero's older profiles have `_context.md` (what a superior reads) and prompts,
    no agent.json: they were listed as broken ("no agent.yaml")."""
    root = usr_dir / "agents" / "data_architect"
    (root / "prompts").mkdir(parents=True)
    (root / "_context.md").write_text("Use for database and schema design.\n")
    (root / "prompts" / "agent.system.main.role.md").write_text("You design schemas.\n")
    found = discover_profiles()["data_architect"]
    assert found.available and found.title == "data_architect"
    assert found.context == "Use for database and schema design."
    origins = {file.path: file.origin for file in profile_status("data_architect").files}
    assert origins["_context.md"] == "user"


def test_agent_zero_settings_in_a_profile_are_ignored_with_a_warning(usr_dir):
    """An Agent Zero profile's settings.json names Agent Zero's settings (its memory
    folder, say): they made the whole profile unusable ("unknown setting(s)")."""
    root = a0.write_json_profile(usr_dir)
    (root / "settings.json").write_text(
        '{"agent_memory_subdir": "analyst", "max_delegation_depth": 2}'
    )
    found = discover_profiles()["analyst"]
    assert found.available and found.settings == {"max_delegation_depth": 2}
    assert profile_status("analyst").warnings == [
        "settings.json: agent_memory_subdir is not a Cadre setting: ignored"
    ]
    # Cadre's own format keeps refusing a misspelt setting, so a typo is never silent.
    cadre = usr_dir / "agents" / "typo"
    cadre.mkdir()
    (cadre / "agent.yaml").write_text("title: Typo\n")
    (cadre / "settings.json").write_text('{"max_delegation_dept": 2}')
    assert discover_profiles()["typo"].error == (
        "settings.json: unknown setting(s) max_delegation_dept"
    )
