"""Branches: a new chat from another at any log item, and an edit of an earlier message.

The app is built in process (its chat store, routes and runner) over the scripted model
server; what the branch's next model request holds is read from that server. A restart
of a real run_ui.py is tests/e2e/test_branches_ui.py's; another person's chat is
test_branch_of_another_s_chat_is_not_found below, on the shared server with accounts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from core.agent_types import UserMessage
from store import persist_chat
from store.chats import ChatManager, chat_row
from tests.support import shared_accounts
from tests.support.agents import answer, history_text, reply, wait_for
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.members import Member, api, ask
from tests.support.server_process import ServerProcess
from tests.support.shared_accounts import ADMIN_KEY

TURNS = [("One?", "Answer one."), ("Two?", "Answer two."), ("Three?", "Answer three."),
         ("Four?", "Answer four.")]  # fmt: skip


@pytest.fixture
def chats(server) -> ChatManager:
    """The chat store of the app the `http` client talks to."""
    manager: ChatManager = server.app.extensions["cadre.chats"]
    return manager


@pytest.fixture(autouse=True)
def _naming(llm):
    llm.add_rule(model_is("util-model"), Reply("A name"))  # naming a chat: a short answer


def run(context, text: str) -> str:
    return context.communicate(UserMessage(text)).result(30)


def four_turns(chats: ChatManager, llm):
    context = chats.new_chat()
    for question, said in TURNS:
        llm.script(Reply(answer(said)))
        assert run(context, question) == said
    return context


def item_no(context, kind: str, content: str) -> int:
    return next(i.no for i in context.log.items if i.type == kind and content in i.content)


def branch(http, chat_id: str, body: dict) -> dict:
    made = http.post(f"/api/chats/{chat_id}/branch", json=body)
    assert made.status_code == 200, made.json
    return made.json


def test_a_branch_at_the_second_turn_goes_on_from_there_and_the_parent_stays(
    http, chats, llm, usr_dir
):
    parent = four_turns(chats, llm)
    before = (json.dumps([i.model_dump() for i in parent.log.items]),
              history_text(parent.agent0))  # fmt: skip
    at = item_no(parent, "response", "Answer two.")
    files = usr_dir / "chats" / parent.id / "attachments"
    files.mkdir(parents=True, exist_ok=True)
    (files / "notes.txt").write_text("the parent's notes")

    made = branch(http, parent.id, {"at": at})
    child = chats.get(made["context_id"])
    assert made["chat"]["parent"] == {"id": parent.id, "at": at}
    assert child.name == f"{parent.name} (branch)" and child.parent == made["chat"]["parent"]
    assert [i.no for i in child.log.items] == list(range(at + 1))
    assert not child.running and not child.interrupted
    copied = usr_dir / "chats" / child.id / "attachments" / "notes.txt"
    assert copied.read_text() == "the parent's notes"  # its files come along

    asked = len(llm.chat_requests("chat-model"))
    llm.script(Reply(answer("Answer five.")))
    assert run(child, "Five?") == "Answer five."
    [request] = llm.chat_requests("chat-model")[asked:]
    said = [m["content"] for m in request.messages[1:]]  # after the system prompt
    assert len(said) == 5, said  # two turns, then the new message
    for (question, answer_text), user, model in zip(TURNS[:2], said[0:4:2], said[1:4:2],
                                                    strict=False):  # fmt: skip
        assert question in user and answer_text in model
    assert "Five?" in said[4]
    assert "Three?" not in request.text and "Answer four." not in request.text

    # The parent is as it was; the list nests the branch under it (its `parent`).
    assert (json.dumps([i.model_dump() for i in parent.log.items]),
            history_text(parent.agent0)) == before  # fmt: skip
    rows = {r["id"]: r for r in chats.summaries(lambda c: chats.runtime.call(chat_row, c))}
    assert rows[child.id]["parent"]["id"] == parent.id and rows[parent.id]["parent"] is None
    # On disk with its link (a restart of run_ui.py: tests/e2e/test_branches_ui.py).
    assert persist_chat.read_chat(child.id).parent.model_dump() == {"id": parent.id, "at": at}
    assert persist_chat.read_header(child.id).parent is not None


def test_a_branch_inside_a_subordinate_s_work_keeps_its_history_and_resumes_it(
    http, chats, llm, usr_dir
):
    context = chats.new_chat()
    llm.script(
        Reply(reply("call_subordinate", message="Research X.", reset=True)),
        Reply(reply("text_editor:write", path="notes.txt", content="X notes")),
        Reply(answer("X is old.")),
        Reply(answer("Final: X is old.")),
    )
    assert run(context, "X?") == "Final: X is old."
    # A1's write: its reply is in its history, and the write's result.
    at = next(i.no for i in context.log.items if i.agentno == 1 and i.type != "agent"
              and i.type != "response")  # fmt: skip

    child = chats.get(branch(http, context.id, {"at": at})["context_id"])
    assert [a.agent_name for a in child.agents()] == ["A0", "A1"]
    sub = child.agents()[1]
    assert "Research X." in history_text(sub) and "X notes" in history_text(sub)
    assert "X is old." not in history_text(sub)
    assert "call_subordinate" in history_text(child.agent0)
    assert "Final" not in history_text(child.agent0)
    assert child.interrupted and child.working_agent is sub
    assert child.log.items[-1].heading == "Branched inside a run"

    # Going on resumes A1 from there: its request holds its work so far, nothing after.
    asked = len(llm.chat_requests("chat-model"))
    llm.script(Reply(answer("X is new.")), Reply(answer("Final: X is new.")))
    assert run(child, "go on") == "Final: X is new."
    a1_request, a0_request = llm.chat_requests("chat-model")[asked:]
    assert "Research X." in a1_request.text and "X notes" in a1_request.text
    assert "X is old." not in a1_request.text and "go on" in a1_request.text
    assert "X is new." in a0_request.messages[-1]["content"]
    assert "Final: X is old." not in a0_request.text


def test_editing_an_earlier_message_makes_a_branch_that_runs_it(http, chats, llm, usr_dir):
    parent = chats.new_chat()
    files = usr_dir / "chats" / parent.id / "attachments"
    files.mkdir(parents=True)
    (files / "plan.txt").write_text("the plan")
    llm.script(Reply(answer("Answer one.")), Reply(answer("Answer two.")),
               Reply(answer("Answer three.")))  # fmt: skip
    run(parent, "One?")
    parent.communicate(UserMessage("Two?", attachments=[str(files / "plan.txt")])).result(30)
    run(parent, "Three?")
    at = item_no(parent, "user", "Two?")
    asked = len(llm.chat_requests("chat-model"))
    llm.script(Reply(answer("Answer two, again.")))

    made = branch(http, parent.id, {"at": at, "message": "Two, said better?"})
    child = chats.get(made["context_id"])

    def answered() -> bool:
        return not child.running and any("again." in i.content for i in child.log.items)

    wait_for(answered, what="the edited run")
    [request] = llm.chat_requests("chat-model")[asked:]
    assert "One?" in request.text and "Two, said better?" in request.messages[-1]["content"]
    assert "Two?" not in request.text and "Answer two." not in request.text
    said = [i.content for i in child.log.items if i.type == "user"]
    assert said == ["One?", "Two, said better?"]
    # Its attachment goes with it, as the branch's own file.
    [attached] = [path for i in child.log.items for path in i.kvps.get("attachments", [])]
    assert attached == str(usr_dir / "chats" / child.id / "attachments" / "plan.txt")
    assert "plan.txt" in request.messages[-1]["content"]
    assert len(parent.log.items) > len(child.log.items)  # the parent kept every turn


def test_branch_errors_are_said_in_plain_words(http, chats, llm):
    parent = four_turns(chats, llm)
    last = len(parent.log.items) - 1

    def refused(chat_id: str, body: object) -> tuple[int, str]:
        got = http.post(f"/api/chats/{chat_id}/branch", json=body)
        return got.status_code, got.json["error"]

    status, words = refused(parent.id, {"at": last + 5})
    assert status == 400 and f"no item {last + 5}" in words and f"0 to {last}" in words
    assert refused(parent.id, {})[0] == 400 and "at" in refused(parent.id, {})[1]
    assert refused(parent.id, {"at": "2"})[0] == 400
    assert refused(parent.id, {"at": True})[0] == 400
    answer_no = item_no(parent, "response", "Answer two.")
    status, words = refused(parent.id, {"at": answer_no, "message": "edit"})
    assert status == 400 and "only those can be edited" in words
    status, words = refused("nosuchchat", {"at": 0})
    assert status == 404 and "no chat" in words
    assert len(chats) == 1  # nothing made by a refusal

    # A running chat is branched from where it stands now: the branch is cut inside its run.
    llm.script(Reply(answer("x " * 400), chunk_size=2, delay=0.05))
    parent.communicate(UserMessage("Five?"))
    wait_for(lambda: any(i.type == "response" and "x x" in i.content
                         for i in parent.log.items), what="the answer streaming")  # fmt: skip
    at = item_no(parent, "user", "Five?")
    child = chats.get(branch(http, parent.id, {"at": at})["context_id"])
    assert child.interrupted and not child.running
    parent.stop()


def test_two_branches_made_at_once_get_names_of_their_own(chats, llm, monkeypatch):
    """Each branch's name is chosen from the owner's chats' names; two branches of one chat
    made at the same time (two tabs, an API client) must not both take "(branch)"."""
    import threading

    from store import chat_branches

    parent = four_turns(chats, llm)
    at = item_no(parent, "response", "Answer two.")
    both_copying = threading.Barrier(2)
    copy = chat_branches.copy_files

    def copy_when_both_are_here(parent_id: str, branch_id: str) -> None:
        # Holds each branch here until the other has chosen its name too (on the old
        # code); made one after the other, the first gives up waiting and goes on.
        try:
            both_copying.wait(timeout=3)
        except threading.BrokenBarrierError:
            pass
        copy(parent_id, branch_id)

    monkeypatch.setattr(chat_branches, "copy_files", copy_when_both_are_here)
    made: list[str] = []
    threads = [threading.Thread(target=lambda: made.append(chats.branch(parent.id, at).name))
               for _ in range(2)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(made) == [f"{parent.name} (branch 2)", f"{parent.name} (branch)"]


# -- accounts: on the shared server with accounts ----------------------------------


@pytest.fixture(scope="module")
def cadre(accounts_server: ServerProcess) -> Iterator[ServerProcess]:
    with shared_accounts.for_module(accounts_server) as server:
        yield server


def test_branch_of_another_s_chat_is_not_found(cadre, _fake_llm_server: FakeLLMServer):
    fake = _fake_llm_server
    fake.reset()
    fake.add_rule(model_is("util-model"), Reply("A chat"))
    ann, bob = Member(cadre, ADMIN_KEY), Member(cadre, ADMIN_KEY)
    fake.script(Reply(answer("Hello, Ann.")))
    chat_id = ask(cadre, ann.key, "Hello")["context_id"]

    refused = api(cadre, "POST", f"/chats/{chat_id}/branch", bob.key, {"at": 0})
    assert refused.status_code == 404 and "no chat" in refused.json()["error"]
    made = api(cadre, "POST", f"/chats/{chat_id}/branch", ann.key, {"at": 1})
    assert made.status_code == 200, made.text
    branch_id = made.json()["context_id"]
    mine = {c["id"]: c for c in api(cadre, "GET", "/chats", ann.key).json()["chats"]}
    assert mine[branch_id]["parent"] == {"id": chat_id, "at": 1}
    assert branch_id not in {c["id"] for c in api(cadre, "GET", "/chats", bob.key).json()["chats"]}
