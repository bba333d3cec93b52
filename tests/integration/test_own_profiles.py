"""A member's own agent profiles and skills (issue 35), against a real run_ui.py with an admin
and two members: in their space (`usr/users/<name>/agents/`, `.../skills/`), offered to their
own agents and shown to them alone; their tool code never runs on the host; a member
imports and deletes skills of their own through the skills panel's routes, an admin the
shared ones (usr/skills/). The fake model server scripts the agents' calls and keeps the
requests, whose system prompts show what each agent was offered.

The test process's shared server with accounts serves the module (a start costs seconds;
tests/support/shared_accounts.py); each test makes the members it uses, so no test depends
on another's accounts or things."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support import shared_accounts
from tests.support.agents import answer, reply
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.live_web import csrf_token, log_in
from tests.support.members import Member, api, ask, page
from tests.support.server_process import ServerProcess
from tests.support.shared_accounts import ADMIN, ADMIN_KEY, ADMIN_PASSWORD
from tests.support.skill_files import skill_md, zip_bytes

#: An answer of the fake model can be slow to come through a busy machine.
TIMEOUT = 120


@pytest.fixture(scope="module")
def cadre(accounts_server: ServerProcess) -> Iterator[ServerProcess]:
    with shared_accounts.for_module(accounts_server, embed_api_base="", embed_api_key="",
                                    llm_retries=0) as server:  # fmt: skip
        yield server


@pytest.fixture
def fake(cadre: ServerProcess, llm: FakeLLMServer) -> FakeLLMServer:
    """The fake model server for this test, naming every chat without a scripted reply."""
    llm.add_rule(model_is("util-model"), Reply("Named"))
    return llm


def space(cadre: ServerProcess, member: Member) -> Path:
    return cadre.usr_dir / "users" / member.name


def log_size(cadre: ServerProcess) -> int:
    return cadre.log_path.stat().st_size


def log_text(cadre: ServerProcess, start: int) -> str:
    """What the server logged from `start` (a `log_size`) on: the server is shared, and what
    other modules made it log says nothing here."""
    with cadre.log_path.open("rb") as log:
        log.seek(start)
        return log.read().decode(errors="replace")


def agent_calls(fake: FakeLLMServer) -> list:
    return fake.chat_requests("chat-model")


def systems(fake: FakeLLMServer, before: int) -> list[str]:
    """The system prompt of each of the agents' model calls since `before`."""
    return [str(r.messages[0]["content"]) for r in agent_calls(fake)[before:]]


def scout(folder: Path, ran: Path, settings: dict[str, Any] | None = None) -> None:
    """Profile `scout` in `folder`, with a tool whose file, if it were ever imported on the
    host, would write `ran`."""
    root = folder / "scout"
    (root / "tools").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "agent.yaml").write_text(
        "title: Scout\ndescription: Ann's scout\ncontext: Finds trails in the hills.\n"
    )
    (root / "tools" / "burrow.py").write_text(
        f"from pathlib import Path\nPath({str(ran)!r}).write_text('ran')\n"
        "from core.tool import Response, Tool\n\n"
        "class Burrow(Tool):\n    async def execute(self, args):\n"
        "        return Response(message='dug')\n"
    )
    (root / "prompts" / "agent.system.tool.burrow.md").write_text("### burrow\nDigs a burrow.")
    if settings is not None:
        (root / "settings.json").write_text(json.dumps(settings))


def profiles_of(member: Member, cadre: ServerProcess) -> dict[str, dict[str, Any]]:
    listed = page(member.browser, cadre, "GET", "/api/profiles")
    assert listed.status_code == 200, listed.text
    return {p["name"]: p for p in listed.json()}


def test_a_members_own_profile_is_offered_to_their_agents_alone(cadre, fake, tmp_path):
    ann, bea = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    logged = log_size(cadre)
    ran = tmp_path / "burrow-ran"
    scout(space(cadre, ann) / "agents", ran)
    wide = space(cadre, ann) / "agents" / "wide"
    wide.mkdir()
    (wide / "agent.yaml").write_text("title: Wide\ndescription: asks for more\n")
    (wide / "settings.json").write_text(json.dumps({"code_exec_sandbox": "none"}))

    # Ann's Agent 0 is offered her scout, and calls it: her subordinate works with it.
    before = len(agent_calls(fake))
    fake.script(Reply(reply("call_subordinate", profile="scout", message="Find a trail.")),
                Reply(answer("The ridge trail.")),
                Reply(answer("Take the ridge trail.")))  # fmt: skip
    assert ask(cadre, ann.key, "Find me a trail")["response"] == "Take the ridge trail."
    agent0, subordinate, _ = systems(fake, before)
    assert "`scout` (Scout): Finds trails in the hills." in agent0
    assert "`wide`" not in agent0  # unusable: its settings.json asks for what is the admin's
    # Its tool file was not run on the host: the scout is told it cannot use it, and why.
    assert "## Tools you cannot use" in subordinate
    assert "- burrow: tool file burrow.py is not run" in subordinate
    assert "### burrow" not in subordinate and not ran.exists()
    assert "burrow.py is not loaded" in log_text(cadre, logged)

    # Bea's Agent 0 is not offered it, and cannot call it; nor is the admin's.
    for key in (bea.key, ADMIN_KEY):
        before = len(agent_calls(fake))
        fake.script(Reply(reply("call_subordinate", profile="scout", message="Find a trail.")),
                    Reply(answer("No scout.")))  # fmt: skip
        assert ask(cadre, key, "Find me a trail")["response"] == "No scout."
        first, second = agent_calls(fake)[before:]
        assert "`scout`" not in first.messages[0]["content"]
        assert "Agent profile 'scout' not found" in json.dumps(second.messages[-1])
    assert not ran.exists()

    # The profiles list: Ann sees hers, with the tool she cannot use and why; Bea does not.
    anns = profiles_of(ann, cadre)
    assert anns["scout"]["source"] == "own" and anns["scout"]["available"]
    (refused,) = anns["scout"]["status"]["unavailable_tools"]
    assert refused["name"] == "burrow" and "no Python is run on the server" in refused["reason"]
    assert not anns["wide"]["available"]
    assert "may not set code_exec_sandbox" in anns["wide"]["error"]
    assert "scout" not in profiles_of(bea, cadre)
    # Ann may start a chat with her own profile as Agent 0's; Bea may not.
    fake.script(Reply(answer("Scouting.")))
    assert ask(cadre, ann.key, "Hi", profile="scout")["response"] == "Scouting."
    refused_chat = api(cadre, "POST", "/message", bea.key, {"message": "Hi", "profile": "scout"})
    assert refused_chat.status_code == 400 and "scout" in refused_chat.json()["error"]
    assert not ran.exists()


def import_zip(http: requests.Session, cadre: ServerProcess, entries: dict[str, str],
               **form: str) -> requests.Response:  # fmt: skip
    headers = {"X-CSRF-Token": csrf_token(http, cadre)}
    return http.post(f"{cadre.url}/api/skills/import", data=form, headers=headers,
                     files={"archive": ("skills.zip", zip_bytes(entries))},
                     timeout=TIMEOUT)  # fmt: skip


def skills_of(http: requests.Session, cadre: ServerProcess) -> dict[str, Any]:
    listed = http.get(f"{cadre.url}/api/skills", timeout=TIMEOUT)
    assert listed.status_code == 200, listed.text
    return dict(listed.json())


def test_a_member_imports_and_deletes_skills_of_their_own(cadre, fake):
    ann, bea = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    logged = log_size(cadre)
    admin = log_in(cadre, ADMIN, ADMIN_PASSWORD)
    # The admin's import goes into the shared folder; Ann's into her own.
    made = import_zip(admin, cadre, {"camp-rules/SKILL.md": skill_md("camp-rules", "Camping.")})
    assert made.status_code == 200, made.text
    assert (cadre.usr_dir / "skills" / "camp-rules" / "SKILL.md").is_file()
    made = import_zip(ann.browser, cadre, {"hike-plans/SKILL.md": skill_md("hike-plans", "Hikes."),
                                           "hike-plans/maps.md": "The ridge."})  # fmt: skip
    assert made.status_code == 200, made.text
    assert made.json()["imported"] == ["hike-plans"]
    assert (space(cadre, ann) / "skills" / "hike-plans" / "maps.md").read_text() == "The ridge."
    assert not (cadre.usr_dir / "skills" / "hike-plans").exists()

    anns = skills_of(ann.browser, cadre)
    assert anns["folder"] == str(space(cadre, ann) / "skills") and anns["shared"] is False
    found = {s["name"]: s for s in anns["skills"]}
    assert found["hike-plans"]["source"] == "own" and found["hike-plans"]["deletable"]
    assert found["camp-rules"]["source"] == "user" and not found["camp-rules"]["deletable"]
    beas = {s["name"] for s in skills_of(bea.browser, cadre)["skills"]}
    assert "camp-rules" in beas and "hike-plans" not in beas
    admins = skills_of(admin, cadre)
    assert admins["shared"] is True and "hike-plans" not in {s["name"] for s in admins["skills"]}
    assert bea.browser.get(f"{cadre.url}/api/skills/hike-plans", timeout=TIMEOUT).status_code == 404

    # Ann's agents are offered it; Bea's are not.
    for who, offered in ((ann, True), (bea, False)):
        before = len(agent_calls(fake))
        fake.script(Reply(answer("Hello.")))
        ask(cadre, who.key, "Hello")
        (system,) = systems(fake, before)
        assert ("`hike-plans`" in system) is offered and "`camp-rules`" in system

    # Ann's export takes her own skills with her.
    with zipfile.ZipFile(io.BytesIO(api(cadre, "GET", "/export", ann.key).content)) as zipped:
        assert zipped.read("files/skills/hike-plans/maps.md") == b"The ridge."
    with zipfile.ZipFile(io.BytesIO(api(cadre, "GET", "/export", bea.key).content)) as zipped:
        assert not any("hike-plans" in name for name in zipped.namelist())

    # Deleting: Bea cannot reach Ann's; Ann cannot delete a shared one; she deletes her own.
    gone = page(bea.browser, cadre, "POST", "/api/skills/hike-plans/delete")
    assert gone.status_code == 404 and "no skill 'hike-plans' of your own" in gone.json()["error"]
    refused = page(ann.browser, cadre, "POST", "/api/skills/camp-rules/delete")
    assert refused.status_code == 403
    assert "shared skill" in refused.json()["error"] and "only an admin" in refused.json()["error"]
    assert (cadre.usr_dir / "skills" / "camp-rules").is_dir()
    assert "refused to delete the shared skill 'camp-rules'" in log_text(cadre, logged)
    deleted = page(ann.browser, cadre, "POST", "/api/skills/hike-plans/delete")
    assert deleted.status_code == 200 and deleted.json() == {"deleted": "hike-plans"}
    assert not (space(cadre, ann) / "skills" / "hike-plans").exists()
    assert page(admin, cadre, "POST", "/api/skills/camp-rules/delete").status_code == 200
    assert not (cadre.usr_dir / "skills" / "camp-rules").exists()


def test_a_members_own_profile_chooses_no_model_unless_members_may(cadre, fake, tmp_path):
    """`member_models` off: the model a member's own profile names is left out (their
    subordinate uses the server's); an admin's profile naming one is obeyed as before."""
    ann = Member(cadre, ADMIN_KEY)
    logged = log_size(cadre)
    scout(space(cadre, ann) / "agents", tmp_path / "ran", {"chat_model": "openai/pricey-model"})
    fake.add_rule(model_is("pricey-model"), Reply(answer("From the pricey model.")))
    before = len(fake.chat_requests("pricey-model"))
    fake.script(Reply(reply("call_subordinate", profile="scout", message="Find a trail.")),
                Reply(answer("The ridge trail.")),
                Reply(answer("Take the ridge trail.")))  # fmt: skip
    assert ask(cadre, ann.key, "Find me a trail")["response"] == "Take the ridge trail."
    assert len(fake.chat_requests("pricey-model")) == before
    assert "members do not choose models here" in log_text(cadre, logged)
