"""A real run_ui.py killed mid-delegation, started again, and the work finished.

The tests that restart a server share one (each restarts it itself); each finds its own
chat by id, and asks for the model calls made after its own restart only."""

from __future__ import annotations

import functools
import json
import time
import urllib.request
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import open_page
from tests.support.agents import answer, reply, wait_for
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
    llm.script(
        Reply(reply("call_subordinate", message="Research X.", profile="researcher", reset=True)),
        Reply(answer("X is " + "really " * 200 + "old."), chunk_size=4, delay=0.03),
    )
    chat_id = call(server, "POST", "/api/v1/message", {"message": "X?", "wait": False})[
        "context_id"
    ]

    def subordinate_streaming() -> bool:
        log = call(server, "GET", f"/api/v1/chats/{chat_id}")["log"]
        return any(i["type"] == "response" and i["agentno"] == 1 for i in log)

    wait_for(subordinate_streaming, timeout=30, what="the subordinate streaming")
    saved = server.usr_dir / "chats" / chat_id / "chat.json"
    # A save while it streams, with some of the answer in it (a busy machine saves late).
    wait_for(lambda: saved.exists() and "really" in saved.read_text(), timeout=30,
             what="a save of the answer being written")  # fmt: skip
    server.kill()  # SIGKILL: no clean shutdown, no last save

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
