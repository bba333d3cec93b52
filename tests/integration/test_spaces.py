"""Each person's memory, projects, knowledge, work folder and attachments are their own
(issue 35), against a real run_ui.py with an admin and members: through the page's routes,
the external API and their agents' tools (the fake model server scripts the calls).

The test process's shared server with accounts serves the module (a start costs seconds;
tests/support/shared_accounts.py); each test makes the members it uses, so no test depends
on another's accounts or things."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support import shared_accounts
from tests.support.agents import answer, reply
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.images import png
from tests.support.live_web import csrf_token, log_in
from tests.support.members import Member, api, ask, page
from tests.support.server_process import ServerProcess
from tests.support.shared_accounts import ADMIN, ADMIN_KEY, ADMIN_PASSWORD

#: An answer of the fake model can be slow to come through a busy machine.
TIMEOUT = 120


@pytest.fixture(scope="module")
def cadre(accounts_server: ServerProcess) -> Iterator[ServerProcess]:
    # Keywords only: what is recalled does not hang on the fake server's vectors.
    with shared_accounts.for_module(accounts_server, embed_api_base="", embed_api_key="",
                                    llm_retries=0) as server:  # fmt: skip
        yield server


@pytest.fixture
def fake(cadre: ServerProcess, llm: FakeLLMServer) -> FakeLLMServer:
    """The fake model server for this test, naming every chat without a scripted reply."""
    llm.add_rule(model_is("util-model"), Reply("Named"))
    return llm


def look(http: requests.Session, cadre: ServerProcess, route: str, **query: str):
    """A page's GET of `route` with `query` as its query string."""
    return http.get(f"{cadre.url}{route}", params=query, timeout=TIMEOUT)


def space(cadre: ServerProcess, member: Member) -> Path:
    """Where a member's things live (accounts/spaces.py)."""
    return cadre.usr_dir / "users" / member.name


def agent_calls(fake: FakeLLMServer) -> list:
    return fake.chat_requests("chat-model")


def told_after(fake: FakeLLMServer, before: int) -> list[str]:
    """What the agents read last in each of their model calls since `before` (a tool's
    result, after the first call)."""
    return [str(r.messages[-1]["content"]) for r in agent_calls(fake)[before:]]


def prompt_text(fake: FakeLLMServer, before: int) -> str:
    """Everything the agents were sent since `before` (system prompt, recalled memories)."""
    return "\n".join(json.dumps(r.messages) for r in agent_calls(fake)[before:])


def test_memory_is_each_persons_own(cadre, fake):
    ann, bea = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    fake.script(Reply(reply("memory_save", text="My locker code is tangerine seven")),
                Reply(answer("Saved.")))  # fmt: skip
    assert ask(cadre, ann.key, "Remember my locker code")["response"] == "Saved."
    assert (space(cadre, ann) / "memory" / "default" / "memory.db").is_file()

    # Bea's agent looks for it with its tool, and recall brings nothing into its prompt.
    before = len(agent_calls(fake))
    fake.script(Reply(reply("memory_load", query="locker code tangerine")),
                Reply(answer("Nothing.")))  # fmt: skip
    ask(cadre, bea.key, "What is my locker code?")
    assert "No memories match" in told_after(fake, before)[1]
    assert "tangerine seven" not in prompt_text(fake, before)
    # Ann's agent recalls it, and finds it with its tool.
    before = len(agent_calls(fake))
    fake.script(Reply(reply("memory_load", query="locker code tangerine")),
                Reply(answer("Found.")))  # fmt: skip
    ask(cadre, ann.key, "What is my locker code?")
    assert "tangerine" in json.dumps(agent_calls(fake)[before].messages)  # recalled
    assert "tangerine seven" in told_after(fake, before)[1]

    # The Memory panel: each person lists their own; another's memory is not theirs to edit.
    listed = page(ann.browser, cadre, "GET", "/api/memory").json()
    (mine,) = [m for m in listed["memories"] if "tangerine" in m["text"]]
    assert page(bea.browser, cadre, "GET", "/api/memory").json()["memories"] == []
    admin = log_in(cadre, ADMIN, ADMIN_PASSWORD)
    assert "tangerine" not in page(admin, cadre, "GET", "/api/memory").text
    changed = page(bea.browser, cadre, "POST", f"/api/memory/{mine['id']}", {"text": "mine now"})
    assert changed.status_code == 404
    gone = page(bea.browser, cadre, "POST", "/api/memory/delete", {"ids": [mine["id"]]})
    assert gone.json() == {"deleted": 0}
    again = page(ann.browser, cadre, "GET", "/api/memory").json()["memories"]
    assert [m["text"] for m in again if m["id"] == mine["id"]] == [mine["text"]]
    # Ann edits her own.
    edited = page(ann.browser, cadre, "POST", f"/api/memory/{mine['id']}", {"text": "code nine"})
    assert edited.status_code == 200


def test_two_people_each_have_their_own_project_of_one_name(cadre, fake):
    ann, bea = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    for who, words in ((ann, "Answer in French."), (bea, "Answer in German.")):
        made = page(who.browser, cadre, "POST", "/api/projects",
                    {"name": "trip", "instructions": words})  # fmt: skip
        assert made.status_code == 201, made.text
        assert made.json()["work_folder"] == str(space(cadre, who) / "projects" / "trip" / "work")
        assert made.json()["knowledge_folder"] == str(
            space(cadre, who) / "projects" / "trip" / "knowledge"
        )
    ann_list = page(ann.browser, cadre, "GET", "/api/projects").json()["projects"]
    assert [(p["name"], p["instructions"]) for p in ann_list] == [("trip", "Answer in French.")]
    bea_trip = api(cadre, "GET", "/projects/trip", bea.key).json()
    assert bea_trip["instructions"] == "Answer in German."
    admins = api(cadre, "GET", "/projects", ADMIN_KEY).json()["projects"]
    assert "trip" not in {p["name"] for p in admins}
    assert api(cadre, "GET", "/projects/trip", ADMIN_KEY).status_code == 404  # the admin has none

    # A project's own profiles are its owner's to see and use.
    guide = space(cadre, ann) / "projects" / "trip" / "agents" / "guide"
    guide.mkdir(parents=True)
    (guide / "agent.yaml").write_text("title: Guide\ndescription: Ann's trip guide\n")
    for who, sees in ((ann, True), (bea, False)):
        listed = look(who.browser, cadre, "/api/profiles", project="trip").json()
        assert ("guide" in {p["name"] for p in listed}) is sees

    # A chat in Ann's "trip" reads Ann's project; the admin has no project of that name.
    before = len(agent_calls(fake))
    fake.script(Reply(answer("Oui.")))
    chat_id = ask(cadre, ann.key, "Hello", project="trip")["context_id"]
    system = agent_calls(fake)[before].messages[0]["content"]
    assert "Answer in French." in system and "Answer in German." not in system
    refused = api(cadre, "POST", "/message", ADMIN_KEY, {"message": "Hi", "project": "trip"})
    assert refused.status_code == 400 and "no project named 'trip'" in refused.text

    # Changing and deleting one leaves the other alone; Ann's has a chat, Bea's none.
    changed = api(cadre, "PATCH", "/projects/trip", bea.key, {"description": "Bea's trip"})
    assert changed.status_code == 200
    assert api(cadre, "GET", "/projects/trip", ann.key).json()["description"] == ""
    assert api(cadre, "GET", "/projects/trip", ann.key).json()["chats"] == 1
    assert api(cadre, "DELETE", "/projects/trip", bea.key).status_code == 200
    assert api(cadre, "GET", "/projects/trip", bea.key).status_code == 404
    assert api(cadre, "GET", "/projects/trip", ann.key).status_code == 200
    assert api(cadre, "DELETE", "/projects/trip", ann.key).status_code == 409
    assert chat_id in {c["id"] for c in api(cadre, "GET", "/chats", ann.key).json()["chats"]}

    # A member's project works in its own folder: naming another folder is the admin's.
    named = api(cadre, "PATCH", "/projects/trip", ann.key, {"work_dir": str(cadre.usr_dir.parent)})
    assert named.status_code == 400 and "only an admin" in named.json()["error"]


def test_knowledge_is_each_persons_own(cadre, fake):
    ann, bea = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    folder = space(cadre, ann) / "knowledge"
    folder.mkdir(parents=True)
    (folder / "ferry.md").write_text("The island ferry leaves from pier nine at dawn.")
    vault = cadre.usr_dir / "knowledge" / "vault.md"  # the admin's: the shared server's
    vault.parent.mkdir(exist_ok=True)
    vault.write_text("The island vault opens with the brass key.")
    question = "When does the island ferry leave, and how does the island vault open?"
    try:
        for who, found, not_found in ((ann, "pier nine", "brass key"),
                                      (bea, "", "pier nine")):  # fmt: skip
            before = len(agent_calls(fake))
            fake.script(Reply(answer("I see.")))
            ask(cadre, who.key, question)
            sent = prompt_text(fake, before)
            assert found in sent and not_found not in sent and "brass key" not in sent
    finally:  # the next module on the server finds the admin's knowledge as it was
        vault.unlink()
    assert (space(cadre, ann) / "memory" / "_knowledge" / "files.json").is_file()


def upload(cadre: ServerProcess, member: Member, name: str, data: bytes, **where: str):
    headers = {"X-CSRF-Token": csrf_token(member.browser, cadre)}
    return member.browser.post(f"{cadre.url}/api/files/upload", params={"root": "work", **where},
                               files={"files": (name, data)}, headers=headers,
                               timeout=TIMEOUT)  # fmt: skip


def test_each_person_sees_only_their_own_work_folder(cadre, fake):
    ann, bea = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    sent = upload(cadre, ann, "plan.txt", b"Ann's plan")
    assert sent.status_code == 200, sent.text
    assert (space(cadre, ann) / "workdir" / "plan.txt").read_bytes() == b"Ann's plan"

    def names(who) -> set[str]:
        listed = look(who, cadre, "/api/files/list", root="work")
        assert listed.status_code == 200, listed.text
        return {e["name"] for e in listed.json()["entries"]}

    assert "plan.txt" in names(ann.browser)
    assert "plan.txt" not in names(bea.browser)
    assert "plan.txt" not in names(log_in(cadre, ADMIN, ADMIN_PASSWORD))
    # Naming Ann's chat does not lend Bea its work folder: Bea's own is shown.
    fake.script(Reply(answer("Hi.")))  # answered whole: no run of it is left to take a reply
    chat_id = ask(cadre, ann.key, "hi")["context_id"]
    shown = look(bea.browser, cadre, "/api/files/list", root="work", chat=chat_id)
    assert "plan.txt" not in {e["name"] for e in shown.json()["entries"]}

    # Reaching Ann's file from Bea's folder is refused, with the same words whether the
    # file is there or not: nothing tells Bea it exists.
    anns_file = space(cadre, ann) / "workdir" / "plan.txt"
    for route in ("list", "preview", "raw", "download"):
        for path in (f"../../{ann.name}/workdir/plan.txt", str(anns_file)):
            there = look(bea.browser, cadre, f"/api/files/{route}", root="work", path=path)
            missing = look(bea.browser, cadre, f"/api/files/{route}", root="work",
                           path=path.replace("plan.txt", "nothing.txt"))  # fmt: skip
            assert there.status_code in (400, 404), (route, path, there.text)
            assert "Ann's plan" not in there.text
            said, unsaid = there.json()["error"], missing.json()["error"]
            assert there.status_code == missing.status_code
            assert said.replace("plan.txt", "nothing.txt") == unsaid

    # Their agents work in their own folders: Ann's writes there, Bea's cannot read it.
    before = len(agent_calls(fake))
    fake.script(Reply(reply("text_editor:write", path="notes.md", content="ann's")),
                Reply(answer("Written.")))  # fmt: skip
    ask(cadre, ann.key, "Write a note")
    assert "notes.md" in told_after(fake, before)[1], told_after(fake, before)
    assert (space(cadre, ann) / "workdir" / "notes.md").read_text() == "ann's"
    before = len(agent_calls(fake))
    fake.script(Reply(reply("text_editor:read", path=str(anns_file))),
                Reply(answer("Read.")))  # fmt: skip
    ask(cadre, bea.key, "Read Ann's plan")
    result = told_after(fake, before)[1]
    assert "Ann's plan" not in result and "outside the work folder" in result


def test_attachments_stay_with_their_chat(cadre, fake):
    ann, bea = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    fake.script(Reply(answer("Hi.")))
    chat_id = ask(cadre, ann.key, "hi")["context_id"]

    def attach(who: Member):
        headers = {"X-CSRF-Token": csrf_token(who.browser, cadre)}
        return who.browser.post(f"{cadre.url}/api/chats/{chat_id}/attachments",
                                files={"file": ("pic.png", png())}, headers=headers,
                                timeout=TIMEOUT)  # fmt: skip

    stored = attach(ann)
    assert stored.status_code == 200, stored.text
    path = stored.json()["path"]
    assert (cadre.usr_dir / "chats" / chat_id / path).is_file()  # in the chat's own folder
    image = f"/api/chats/{chat_id}/images/{path}"
    assert page(ann.browser, cadre, "GET", image).status_code == 200
    # To anyone else the chat is not there: no upload into it, no image out of it.
    assert attach(bea).status_code == 404
    assert page(bea.browser, cadre, "GET", image).status_code == 404
    admin = log_in(cadre, ADMIN, ADMIN_PASSWORD)
    assert page(admin, cadre, "GET", image).status_code == 404
