"""A person's own agent profiles and skills (issue 35): in their space, found by their own
agents alone, above the shared ones (usr/, the admin's) and below their project's; what
runs on the host is the admin's alone, so a profile there runs no Python and its
settings.json sets nothing that runs a program or widens what agents reach."""

from __future__ import annotations

import json

from accounts.spaces import USERS_DIR
from helpers import folders
from helpers.settings import Settings
from profiles import catalog, skills
from profiles.personal import MODEL_OPTIONS, OWN_PROFILE_SETTINGS, REFUSED
from profiles.projects import ProjectRef, place_of
from profiles.prompts import PromptLoader
from profiles.status import profile_status
from tests.support.agents import backdate
from tests.support.skill_files import make_skill


def profile(agents, name: str, *, title: str = "", settings: dict | None = None):
    root = agents / name
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    (root / "agent.yaml").write_text(f"title: {title or name}\ndescription: {name}\n")
    if settings is not None:
        (root / "settings.json").write_text(json.dumps(settings))
    return root


def test_a_place_without_a_project_is_the_space_alone_and_false(usr_dir):
    ann = usr_dir / "users" / "ann"
    assert place_of(None, usr_dir) is None  # the desktop mode's, the first admin's
    assert place_of("trip", usr_dir) == ProjectRef("trip", usr_dir)
    alone = place_of(None, ann)
    assert alone == ProjectRef("", ann) and not alone  # `if project:` means a project
    assert place_of("trip", ann) == ProjectRef("trip", ann) and place_of("trip", ann)


def test_own_profiles_are_found_by_their_owner_alone_between_shared_and_project(usr_dir):
    ann, bea = usr_dir / "users" / "ann", usr_dir / "users" / "bea"
    profile(usr_dir / "agents", "guide", title="Shared guide")
    profile(ann / "agents", "guide", title="Ann's guide")
    profile(ann / "agents", "scout", title="Ann's scout")
    profile(ann / "projects" / "trip" / "agents", "guide", title="Trip guide")
    (ann / "projects" / "trip" / "settings.json").write_text("{}")

    anns = catalog.discover_profiles(place_of(None, ann))
    assert anns["guide"].title == "Ann's guide" and anns["guide"].source == "own"
    assert anns["scout"].available
    assert catalog.discover_profiles(place_of("trip", ann))["guide"].title == "Trip guide"
    assert "scout" in catalog.subordinate_profiles(place_of("trip", ann))
    for elsewhere in (place_of(None, bea), None):
        found = catalog.discover_profiles(elsewhere)
        assert "scout" not in found and found["guide"].title == "Shared guide"
    # Its prompts layer over the shared profile's, the most specific first.
    folders_of = catalog.layered_folders("guide", "prompts", place_of(None, ann))
    assert folders_of[:2] == [ann / "agents" / "guide" / "prompts",
                              usr_dir / "agents" / "guide" / "prompts"]  # fmt: skip


def test_own_skills_are_found_by_their_owner_alone(usr_dir, shipped):
    ann, bea = usr_dir / "users" / "ann", usr_dir / "users" / "bea"
    make_skill(usr_dir / "skills", "tidy", "Shared tidy.")
    make_skill(ann / "skills", "tidy", "Ann's tidy.")
    make_skill(ann / "skills", "hike", "Ann's hikes.")
    anns = skills.discover_skills("", place_of(None, ann))
    assert anns["tidy"].description == "Ann's tidy." and anns["tidy"].source == "own"
    assert anns["tidy"].overrides == ("user",) and anns["hike"].usable
    for elsewhere in (place_of(None, bea), None):
        found = skills.discover_skills("", elsewhere)
        assert "hike" not in found and found["tidy"].description == "Shared tidy."
    labels = [label for label, _ in skills.skill_sources("default", place_of("trip", ann))]
    assert labels[:3] == ["shipped", "user", "own"] and labels[-1] == "project:trip"


def test_every_setting_is_decided_for_a_profile_of_ones_own():
    fields = set(Settings.model_fields)
    assert not OWN_PROFILE_SETTINGS & REFUSED.keys()
    assert fields == OWN_PROFILE_SETTINGS | REFUSED.keys(), "decide on the new setting here"
    assert folders.PERSONAL_SPACES == USERS_DIR


def test_an_own_profiles_settings_may_not_run_programs_or_widen_access(usr_dir, caplog):
    ann = usr_dir / "users" / "ann"
    wide = {"code_exec_sandbox": "none", "mcp_servers": '{"mcpServers": {}}',
            "chat_model": "openai/gpt-4.1-mini"}  # fmt: skip
    profile(ann / "agents", "wide", settings=wide)
    profile(ann / "agents", "elsewhere", settings={"chat_kwargs": {"api_base": "http://x"}})
    profile(ann / "agents", "tuned", settings={"chat_kwargs": {"temperature": 0.2},
                                              "budget_calls": 9, "history_ratio": 0.5})  # fmt: skip
    profile(usr_dir / "agents", "admins", settings=wide)  # the shared ones are the admin's
    found = catalog.discover_profiles(place_of(None, ann))
    assert not found["wide"].available
    assert "may not set code_exec_sandbox, mcp_servers" in found["wide"].error
    assert "names a program the server runs" in found["wide"].error
    assert not found["elsewhere"].available and "not api_base" in found["elsewhere"].error
    assert "temperature" in found["elsewhere"].error and "temperature" in MODEL_OPTIONS
    assert found["tuned"].available
    assert catalog.profile_settings("tuned", place_of(None, ann))["budget_calls"] == 9
    assert found["admins"].available
    assert catalog.profile_settings("admins", None)["code_exec_sandbox"] == "none"
    assert any("'wide'" in r.message and "unavailable" in r.message for r in caplog.records)


def test_a_prompt_companion_in_ones_own_folder_is_never_run(usr_dir, tmp_path, caplog):
    ran = tmp_path / "ran"
    root = profile(usr_dir / "users" / "ann" / "agents", "scout")
    (root / "prompts" / "agent.system.main.role.md").write_text("Role: {{role}}.")
    (root / "prompts" / "agent.system.main.role.py").write_text(
        f"from pathlib import Path\nPath({str(ran)!r}).write_text('ran')\n"
        "def get_variables(context, **variables):\n    return {'role': 'run'}\n"
    )
    backdate(root, 60)
    loader = PromptLoader([root / "prompts"])
    assert loader.render("agent.system.main.role.md", role="as given") == "Role: as given."
    assert not ran.exists()
    assert any("is not run" in r.message for r in caplog.records)
    warnings = profile_status("scout", place_of(None, usr_dir / "users" / "ann")).warnings
    assert any(w.startswith("prompts/agent.system.main.role.py is not run") for w in warnings)
    # The same companion in a shared profile runs, as before.
    shared = profile(usr_dir / "agents", "shared-scout")
    for name in ("agent.system.main.role.md", "agent.system.main.role.py"):
        (shared / "prompts" / name).write_text((root / "prompts" / name).read_text())
    assert PromptLoader([shared / "prompts"]).render("agent.system.main.role.md") == "Role: run."
    assert ran.read_text() == "ran"
