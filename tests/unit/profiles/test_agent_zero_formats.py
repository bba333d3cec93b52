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
