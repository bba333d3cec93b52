"""Branches on a real run_ui.py: made through the API, both chats kept over a restart of
the process, and made from the page's "Branch" on a message, listed under the parent.

One run_ui.py serves the module (the restart test restarts it itself); each test makes
its own chats and asks only for the model calls made after its own point.
Set BRANCHES_SHOTS to a folder to keep screenshots of the page at desktop and phone width.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import open_page
from tests.support.agents import answer
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.live_web import live_server, warm_up
from tests.support.server_process import ServerProcess, call_api

KEY = "e2e-key"
call = functools.partial(call_api, key=KEY)
TURNS = [("One?", "Answer one."), ("Two?", "Answer two."), ("Three?", "Answer three."),
         ("Four?", "Answer four.")]  # fmt: skip


@pytest.fixture(scope="module")
def shared(_fake_llm_server: FakeLLMServer, tmp_path_factory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("branches")
    server = live_server(folder, _fake_llm_server.base_url, api_key=KEY, llm_retry_delay="0.01")
    warm_up(server, _fake_llm_server)
    yield server
    server.stop()


@pytest.fixture
def server(shared: ServerProcess, llm: FakeLLMServer) -> ServerProcess:
    llm.add_rule(model_is("util-model"), Reply("Trip plans"))  # naming: a short answer
    return shared


def chat_of(server: ServerProcess, llm: FakeLLMServer, turns: list[tuple[str, str]]) -> str:
    chat_id = None
    for question, said in turns:
        llm.script(Reply(answer(said)))
        body = {"message": question, **({"context_id": chat_id} if chat_id else {})}
        done = call(server, "POST", "/api/v1/message", body)
        assert done["response"] == said
        chat_id = done["context_id"]
    assert chat_id is not None
    return chat_id


def response_no(detail: dict, text: str) -> int:
    return next(i["no"] for i in detail["log"] if i["type"] == "response" and text in i["content"])


def test_a_branch_and_its_parent_survive_a_restart(server, llm):
    parent_id = chat_of(server, llm, TURNS)
    before = call(server, "GET", f"/api/v1/chats/{parent_id}")
    at = response_no(before, "Answer two.")
    branch_id = call(server, "POST", f"/api/v1/chats/{parent_id}/branch", {"at": at})["context_id"]

    server.restart()
    listed = {c["id"]: c for c in call(server, "GET", "/api/v1/chats")["chats"]}
    assert listed[branch_id]["parent"] == {"id": parent_id, "at": at}
    assert listed[branch_id]["name"].endswith("(branch)") and listed[parent_id]["parent"] is None
    parent = call(server, "GET", f"/api/v1/chats/{parent_id}")
    assert [(i["no"], i["content"]) for i in parent["log"]] == [
        (i["no"], i["content"]) for i in before["log"]
    ]  # unchanged
    assert [b["id"] for b in parent["branches"]] == [branch_id]
    branch = call(server, "GET", f"/api/v1/chats/{branch_id}")
    assert len(branch["log"]) == at + 1 and branch["chat"]["interrupted"] is False

    # The branch goes on from the second turn: its next request holds those two, then the new.
    asked = len(llm.chat_requests("chat-model"))
    llm.script(Reply(answer("Answer five.")))
    done = call(server, "POST", "/api/v1/message", {"message": "Five?", "context_id": branch_id})
    assert done["response"] == "Answer five."
    [request] = llm.chat_requests("chat-model")[asked:]
    said = [str(m["content"]) for m in request.messages[1:]]
    assert len(said) == 5
    assert ["One?" in said[0], "Answer one." in said[1], "Two?" in said[2],
            "Answer two." in said[3], "Five?" in said[4]] == [True] * 5  # fmt: skip


def _shot(page, name: str) -> None:
    folder = os.environ.get("BRANCHES_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"))


def test_branch_from_a_message_in_the_page(server, llm, browser, request):
    parent_id = chat_of(server, llm, TURNS[:3])
    detail = call(server, "GET", f"/api/v1/chats/{parent_id}")
    at = response_no(detail, "Answer two.")
    sizes = {"desktop": {"viewport": {"width": 1280, "height": 800}},
             "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True,
                       "has_touch": True}}  # fmt: skip
    for size, options in sizes.items():
        for page in open_page(browser, request, f"{server.url}/#/chat/{parent_id}", **options):
            item = page.locator(f'[data-testid="log-item"][data-no="{at}"]')
            item.get_by_text("Answer two.").wait_for()
            button = item.get_by_role("button", name="Branch from here")
            if size == "desktop":
                item.hover()
                _shot(page, f"branch-{size}-message")
                button.focus()  # by keyboard: Enter on the focused button
                page.keyboard.press("Enter")
            else:
                button.click()
            page.wait_for_function("id => !location.hash.endsWith(id)", arg=parent_id)
            page.get_by_test_id("chat-parent").wait_for()
            branch_id = page.evaluate("location.hash").rsplit("/", 1)[-1]
            # Under its parent in the list, and a link back to it in the header.
            rows = page.locator('[data-testid="chat-item"]')
            ids = rows.evaluate_all("els => els.map((el) => el.dataset.chatId)")
            assert ids[ids.index(parent_id) + 1] == branch_id
            row = page.locator(f'[data-testid="chat-item"][data-chat-id="{branch_id}"]')
            assert row.evaluate("el => el.closest('li').dataset.depth") == "1"
            assert "Branch of" in row.inner_text() or "Branch of" in row.text_content()
            page.get_by_text("Answer two.").wait_for()
            assert page.get_by_text("Answer three.").count() == 0
            link = page.get_by_test_id("chat-parent")
            assert "Branch of" in link.inner_text()
            _shot(page, f"branch-{size}-made")
            if size == "phone":
                page.get_by_test_id("chats-toggle").click()
                row.wait_for()
                # The drawer slides in: its picture once it is in place.
                page.wait_for_function("() => document.getElementById('sidebar')"
                                       ".getBoundingClientRect().left >= 0")  # fmt: skip
                _shot(page, f"branch-{size}-list")
                page.keyboard.press("Escape")
            link.click()
            page.wait_for_function("id => location.hash.endsWith(id)", arg=parent_id)
            page.get_by_text("Answer three.").wait_for()
            if size == "desktop":
                edit_an_earlier_message(page, llm, parent_id)


def edit_an_earlier_message(page, llm: FakeLLMServer, parent_id: str) -> None:
    """Edit of the first message: run in a new branch; the parent keeps every turn."""
    first = page.locator('[data-testid="log-item"][data-type="user"]').first
    first.get_by_test_id("message-edit").click()
    editor = page.get_by_test_id("message-edit-input")
    editor.fill("One, better?")
    llm.script(Reply(answer("Answer one, better.")))
    save = page.get_by_test_id("message-save")
    assert save.inner_text() == "Save and run in a branch"
    save.click()
    page.get_by_text("Answer one, better.").wait_for()
    assert not page.evaluate("location.hash").endswith(parent_id)
    assert page.get_by_text("Answer two.").count() == 0
    _shot(page, "branch-desktop-edited")
