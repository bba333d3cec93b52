"""Tool code in a person's own folder (their own profile's, their project's) is never
imported: the host runs only the admin's code. The tool is unusable with the reason,
wherever tools' problems are told, and the log says why; two people's agents never share a
system prompt, whose tools and skills are each one's own."""

from __future__ import annotations

import asyncio

from core.chat import Chat
from core.prompt.chat_variables import prompt_loader
from core.prompt.system_prompt import build_system_prompt
from core.tooling.tool_loader import load_problem, tool_files
from core.tooling.tool_status import tool_problems
from initialize import agent_config
from profiles.projects import place_of
from tests.support.agents import backdate
from tests.support.skill_files import make_skill


def burrowing_profile(agents, ran) -> None:
    """Profile `scout` with a tool `burrow` whose file, if ever imported, writes `ran`."""
    root = agents / "scout"
    (root / "tools").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "agent.yaml").write_text("title: Scout\ndescription: finds trails\n")
    (root / "tools" / "burrow.py").write_text(
        f"from pathlib import Path\nPath({str(ran)!r}).write_text('ran')\n"
        "from core.tool import Response, Tool\n\n"
        "class Burrow(Tool):\n    async def execute(self, args):\n"
        "        return Response(message='dug')\n"
    )
    (root / "prompts" / "agent.system.tool.burrow.md").write_text("### burrow\nDigs.")


def test_a_tool_file_in_ones_own_profile_or_project_is_not_imported(usr_dir, tmp_path, caplog):
    ann = usr_dir / "users" / "ann"
    trip = ann / "projects" / "trip" / "agents"
    for place, agents in ((place_of(None, ann), ann / "agents"), (place_of("trip", ann), trip)):
        ran = tmp_path / f"ran-{len(agents.parts)}"
        burrowing_profile(agents, ran)
        path = tool_files("scout", place)["burrow"]
        assert path == agents / "scout" / "tools" / "burrow.py"
        problem = load_problem(path)
        assert problem is not None and "burrow.py is not run" in problem
        assert "no Python is run on the server" in problem
        problems = tool_problems("scout", place, prompt_loader("scout", place))
        assert problems["burrow"] == problem
        assert not ran.exists()
        assert any("is not loaded" in r.message and str(path) in r.message
                   for r in caplog.records)  # fmt: skip
    # The same profile shared (usr/agents/, the admin's) runs its tool, as before.
    ran = tmp_path / "ran-shared"
    burrowing_profile(usr_dir / "agents", ran)
    assert load_problem(tool_files("scout")["burrow"]) is None
    assert ran.read_text() == "ran"


def test_two_peoples_agents_never_share_a_system_prompt(usr_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("CADRE_CHAT_MODEL", "openai/gpt-4.1")  # every tool offered: skills too
    ann = usr_dir / "users" / "ann"
    make_skill(ann / "skills", "anns-hikes", "Plans Ann's hikes.")
    burrowing_profile(ann / "agents", tmp_path / "ran")
    backdate(usr_dir, 60)

    def prompt(owner: str | None) -> str:
        context = Chat(agent_config(owner=owner), owner=owner)
        return asyncio.run(build_system_prompt(context.agent0))

    for _ in range(2):  # each built once, then reused: still each one's own
        for owner, own in (("bea", False), ("ann", True), (None, False)):
            text = prompt(owner)
            assert ("anns-hikes" in text) is own, owner
            assert ("`scout` (Scout)" in text) is own, owner
    assert not (tmp_path / "ran").exists()
