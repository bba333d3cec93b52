"""A real run_ui.py killed mid-delegation, started again, and the work finished.

The tests that restart a server share one (each restarts it itself); each finds its own
chat by id, and asks for the model calls made after its own restart only."""

from __future__ import annotations

import functools
import json
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import open_page
from tests.support.agents import answer, cut_before, reply, wait_for
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import live_server
from tests.support.server_process import ServerProcess, call_api, server_env

KEY = "e2e-key"


call = functools.partial(call_api, key=KEY)


@pytest.fixture(scope="module")
def shared(_fake_llm_server, tmp_path_factory) -> Iterator[ServerProcess]:
    """One run_ui.py for the module's restart tests: each kills or stops it and starts it
    again itself, so a start of its own before that would only cost time."""
    folder = tmp_path_factory.mktemp("restart")
    process = live_server(folder, _fake_llm_server.base_url, api_key=KEY, llm_retry_delay="0.01")
    yield process
    process.stop()


@pytest.fixture
def server(shared: ServerProcess, llm) -> ServerProcess:
    # Chat names: a naming call of an earlier test's chat never takes a scripted reply.
    llm.add_rule(model_is("util-model"), Reply("A chat"))
    return shared


#: In the page, after a restart: [is the cut answer marked interrupted, is the continued
#: answer drawn after the restart's notice (not in the delegation's block above it)].
SEEN_AFTER_RESTART = """() => {
    const items = [...document.querySelectorAll('[data-testid="log-item"]')];
    const notice = items.find((el) => el.dataset.type === "info"
        && el.textContent.includes("Interrupted"));
    const answers = items.filter(
        (el) => el.dataset.type === "response" && el.dataset.agent === "A1");
    const cut = answers.find((el) => el.textContent.includes("really"));
    const resumed = answers.find((el) => el.textContent.includes("X is old."));
    return [cut.classList.contains("is-unfinished") && cut.textContent.includes("interrupted"),
            Boolean(notice.compareDocumentPosition(resumed) & Node.DOCUMENT_POSITION_FOLLOWING)
            && resumed.closest(".delegation") === null];
}"""


def test_killed_while_the_subordinate_streams_then_continued(server, llm, browser, request):
    # A1's answer is held twice while it is written: the chat reaches disk with the first
    # part, then again with the second, and the kill comes while the rest is held back.
    # (Waiting for any save with part of it was not enough: no save came while a reply
    # streamed, so the first one with it often came once the answer was whole; Agent 0
    # then rightly worked on, and "go on" went to it.)
    first, second = threading.Event(), threading.Event()
    written = cut_before(answer("X is " + "really " * 20 + "truly " * 20 + "old."), "truly", "old.")
    llm.script(
        Reply(reply("call_subordinate", message="Research X.", profile="researcher", reset=True)),
        Reply(written, holds={1: first, 2: second}),
    )
    chat_id = call(server, "POST", "/api/v1/message", {"message": "X?", "wait": False})[
        "context_id"
    ]
    saved = server.usr_dir / "chats" / chat_id / "chat.json"

    def on_disk(word: str) -> bool:
        return saved.exists() and word in saved.read_text()

    try:
        # A fresh server's first call waits for litellm's import: a liveness bound.
        wait_for(lambda: on_disk("really"), timeout=30, what="the answer's first part on disk")
        first.set()
        # Ends before the fake gives up holding the rest (30 s), which would end the answer.
        wait_for(lambda: on_disk("truly"), timeout=20, what="the answer's second part on disk")
        server.kill()  # SIGKILL while the rest is held: no clean shutdown, no last save
    finally:
        first.set()
        second.set()
    assert json.loads(saved.read_text())["working_agent"] == 1

    llm.script(Reply(answer("X is old.")), Reply(answer("Final: X is old.")))
    server.start()
    detail = call(server, "GET", f"/api/v1/chats/{chat_id}")
    assert detail["chat"]["interrupted"] is True
    assert [a["profile"] for a in detail["agents"]] == ["agent0", "researcher"]
    done = call(server, "POST", "/api/v1/message", {"message": "go on", "context_id": chat_id})
    assert done == {"context_id": chat_id, "response": "Final: X is old."}
    chat_calls = [r for r in llm.chat_requests() if r.body["model"] == "chat-model"]
    a1_prompt, a0_prompt = (r.messages for r in chat_calls[-2:])
    assert "careful researcher" in a1_prompt[0]["content"] and "go on" in a1_prompt[-1]["content"]
    assert "[Result of tool `call_subordinate`]\nX is old." in a0_prompt[-1]["content"]
    # The page: the cut answer marked, the continued one drawn below the restart's notice.
    for page in open_page(browser, request, f"{server.url}/#/chat/{chat_id}"):
        page.get_by_text("Final: X is old.").wait_for()
        assert page.evaluate(SEEN_AFTER_RESTART) == [True, True]


def test_ctrl_c_saves_running_chats_as_interrupted(server, llm):
    llm.script(Reply(answer("slow " * 200), chunk_size=4, delay=0.05))
    chat_id = call(server, "POST", "/api/v1/message", {"message": "go", "wait": False})[
        "context_id"
    ]

    # A fresh server's first call waits for litellm's import (~9 s on this machine, more
    # in a fresh clone): a liveness bound, not a speed check.
    def streaming() -> bool:
        return any(i["type"] == "response" for i in call(
            server, "GET", f"/api/v1/chats/{chat_id}")["log"])  # fmt: skip

    wait_for(streaming, timeout=30, what="streaming")
    server.stop()  # SIGTERM, as Ctrl-C: a clean shutdown
    server.start()
    assert call(server, "GET", f"/api/v1/chats/{chat_id}")["chat"]["interrupted"] is True


def test_the_first_start_makes_an_api_key(usr_dir, tmp_path):
    process = ServerProcess(server_env(), tmp_path / "first.log").start()
    try:
        stored = json.loads((usr_dir / "settings.json").read_text())
        assert len(stored["api_key"]) >= 24
        request = urllib.request.Request(process.url + "/api/v1/chats",
                                         headers={"X-API-Key": stored["api_key"]})  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.loads(response.read()) == {"chats": []}
    finally:
        process.stop()


def test_killed_while_siblings_work_then_every_unfinished_one_resumes(server, llm):
    from tests.integration.test_parallel_subordinates import TASKS, delegate_all, task_is

    llm.add_rule(task_is("Task ONE"), Reply(answer("apple, pear")))
    slow = [
        llm.add_rule(task_is(t), Reply(answer("still " * 200), chunk_size=4, delay=0.03))
        for t in ("Task TWO", "Task THREE")
    ]
    llm.script(delegate_all(*TASKS))
    chat_id = call(server, "POST", "/api/v1/message", {"message": "Lists?", "wait": False})[
        "context_id"
    ]

    def one_done_two_streaming() -> bool:
        log = call(server, "GET", f"/api/v1/chats/{chat_id}")["log"]
        answered = {i["agent"] for i in log if i["type"] == "response"}
        return {"A1.1", "A1.2", "A1.3"} <= answered

    wait_for(one_done_two_streaming, timeout=30, what="A1.1 done, A1.2 and A1.3 streaming")
    time.sleep(0.3)  # a save or two while they stream
    server.kill()  # SIGKILL: no clean shutdown, no last save

    for rule in slow:
        llm.remove_rule(rule)
    llm.add_rule(task_is("Task TWO"), Reply(answer("oak, elm")))
    llm.add_rule(task_is("Task THREE"), Reply(answer("robin, wren")))
    llm.script(Reply(answer("Three lists.")))
    asked = len(llm.chat_requests())
    server.start()
    detail = call(server, "GET", f"/api/v1/chats/{chat_id}")
    assert detail["chat"]["interrupted"] is True
    assert [a["name"] for a in detail["agents"]] == ["A0", "A1.1", "A1.2", "A1.3"]
    done = call(server, "POST", "/api/v1/message", {"message": "go on", "context_id": chat_id})
    assert done == {"context_id": chat_id, "response": "Three lists."}
    again = [r for r in llm.chat_requests()[asked:] if r.body["model"] == "chat-model"]
    assert len(again) == 3  # A1.2, A1.3 and Agent 0: the finished A1.1 did not run again
    result = again[-1].messages[-1]["content"]
    for block in ("## A1.1 (default) answered\napple, pear",
                  "## A1.2 (default) answered\noak, elm",
                  "## A1.3 (default) answered\nrobin, wren"):  # fmt: skip
        assert block in result
