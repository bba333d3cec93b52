"""A chat whose model has no credit left goes on with its fallback, in Chromium against a
real run_ui.py: the step's row says which model answered and why, and while the fallback
writes, the chat's header and the status line say a fallback is in use; the usage's
tooltip names the model that answered."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import open_page
from tests.support.agents import answer
from tests.support.fake_llm import Fail, FakeLLMServer, Reply, model_is
from tests.support.server_process import ServerProcess

ITEM = '[data-testid="log-item"]'
IN_USE = "Fallback: openai/backup-model answers instead of openai/chat-model"


@pytest.fixture(scope="module")
def fake(_fake_llm_server: FakeLLMServer) -> FakeLLMServer:
    return _fake_llm_server


@pytest.fixture(scope="module")
def server(fake, tmp_path_factory) -> Iterator[ServerProcess]:
    usr = tmp_path_factory.mktemp("usr")
    backup = {"model": "openai/backup-model", "api_base": fake.base_url, "api_key": "k"}
    settings = {
        "chat_model": "openai/chat-model", "chat_api_base": fake.base_url, "chat_api_key": "k",
        "chat_fallbacks": [backup],
        "util_model": "openai/util-model", "util_api_base": fake.base_url, "util_api_key": "k",
        "embed_model": "",
    }  # fmt: skip
    (usr / "settings.json").write_text(json.dumps(settings))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRE_")}
    env.pop("PYTEST_CURRENT_TEST", None)
    env["CADRE_USR_DIR"] = str(usr)
    process = ServerProcess(env, tmp_path_factory.mktemp("logs") / "server.log").start()
    yield process
    process.stop()


@pytest.fixture
def page(browser, request, server, fake) -> Iterator[object]:
    fake.reset()
    fake.add_rule(model_is("util-model"), Reply("A chat"))  # naming the chat
    for opened in open_page(browser, request, server.url):
        opened.set_default_timeout(30_000)  # a loaded 2-core machine: generous waits
        yield opened


def test_a_model_out_of_credit_hands_the_chat_to_its_fallback(page, fake):
    fake.add_rule(model_is("chat-model"), Fail(402, "insufficient credit"))
    go_on = threading.Event()
    fake.add_rule(model_is("backup-model"), Reply(answer("From the backup."), holds={3: go_on}))
    page.get_by_test_id("new-chat").click()
    page.get_by_test_id("message-input").fill("hello")
    page.get_by_test_id("message-input").press("Enter")

    # The step's row says it, while the fallback writes (held part-way).
    moved = page.get_by_test_id("step-fallback")
    moved.wait_for(timeout=120_000)  # the server's first model call imports litellm
    assert moved.inner_text() == (
        "openai/chat-model refused: no credit or quota left; openai/backup-model answered"
    )
    # The header and the status line say a fallback is in use, with why on hover.
    header = page.get_by_test_id("chat-fallback")
    header.wait_for()
    assert header.inner_text() == IN_USE
    assert "no credit or quota left" in header.get_attribute("title")
    assert page.get_by_test_id("status-fallback").inner_text() == f"· {IN_USE}"

    go_on.set()
    page.locator(f'{ITEM}[data-type="response"]').filter(has_text="From the backup.").wait_for()
    assert header.is_visible()  # the chat's own model is passed over for its cool-down
    # The chat's usage, by the model that answered (the total's tooltip).
    total = page.get_by_test_id("usage-total")
    total.filter(has_text="tok").wait_for()
    by_model = total.get_attribute("title")
    assert "by model: openai/backup-model" in by_model and "openai/chat-model" not in by_model
    assert len(fake.chat_requests(model="chat-model")) == 1  # a 402 is not tried again
