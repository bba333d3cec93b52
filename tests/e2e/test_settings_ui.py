"""The settings dialog in Chromium: every field labelled, explained and grouped from the
fields' own metadata, the environment's overrides read-only, `*_kwargs` edited as JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.settings import Settings
from tests.e2e.conftest import open_page
from tests.support.server_process import ServerProcess


@pytest.fixture(scope="module")
def cadre(shared_cadre: ServerProcess) -> ServerProcess:
    """The test process's shared run_ui.py (tests/e2e/conftest.py); the models are set by
    CADRE_* variables, as in a deployment."""
    return shared_cadre


@pytest.fixture
def page(browser, request, cadre) -> Iterator[object]:
    yield from open_page(browser, request, cadre.url)


def open_settings(page) -> None:
    page.get_by_test_id("settings-open").click()
    page.get_by_test_id("field-llm_retry_delay").wait_for()


def test_every_field_has_a_label_a_hint_its_unit_and_the_right_control(page):
    open_settings(page)
    dialog = page.get_by_test_id("settings")
    shown = set(
        dialog.locator("[data-setting]").evaluate_all("els => els.map(e => e.dataset.setting)")
    )
    assert shown == set(Settings.model_fields)  # rendered from the server's list, none left out

    delay = Settings.model_fields["llm_retry_delay"]
    assert dialog.locator("label[for=setting-llm_retry_delay]").inner_text() == delay.title
    assert page.get_by_test_id("hint-llm_retry_delay").inner_text() == delay.description
    assert page.get_by_test_id("unit-llm_retry_delay").inner_text() == "s"
    assert page.get_by_test_id("unit-llm_max_reply_chars").inner_text() == "characters"
    retries = page.get_by_test_id("field-llm_retries")
    assert retries.get_attribute("type") == "number" and retries.get_attribute("min") == "0"

    structured = page.get_by_test_id("field-structured_output")
    assert structured.evaluate("el => el.tagName") == "SELECT"
    values = structured.locator("option").evaluate_all("os => os.map(o => o.value)")
    assert values == ["auto", "on", "off"] and structured.input_value() == "auto"
    assert page.get_by_test_id("field-memory_memorize").get_attribute("type") == "checkbox"
    assert page.get_by_test_id("field-allowed_hosts").evaluate("el => el.tagName") == "TEXTAREA"

    headings = dialog.locator("legend").all_inner_texts()
    for heading in ("Model", "Memory", "Limits and timeouts", "Code execution",
                    "Server and security"):  # fmt: skip
        assert heading in headings
    text = dialog.inner_text()
    assert "memory memorize" not in text and "history bulks share" not in text


def test_a_field_the_environment_sets_is_read_only_and_says_where(page, cadre):
    open_settings(page)
    model = page.get_by_test_id("field-chat_model")
    assert model.input_value() == "openai/chat-model"
    assert model.evaluate("el => el.readOnly") is True
    note = page.get_by_test_id("env-chat_model").inner_text()
    assert "CADRE_CHAT_MODEL" in note and "change it there" in note
    assert page.get_by_test_id("field-chat_api_key").evaluate("el => el.readOnly") is True
    assert page.get_by_test_id("field-chat_ctx_length").evaluate("el => el.readOnly") is False


def test_kwargs_are_json_checked_before_anything_is_saved(page, cadre):
    settings_file = Path(cadre.env["CADRE_USR_DIR"]) / "settings.json"
    before = settings_file.read_text(encoding="utf-8")  # the first start stored an API key
    open_settings(page)
    kwargs = page.get_by_test_id("field-chat_kwargs")
    error = page.get_by_test_id("field-error-chat_kwargs")
    page.get_by_test_id("field-budget_calls").fill("7")

    kwargs.fill('{"temperature": 0.2,')
    page.get_by_test_id("settings-save").click()
    error.wait_for()
    assert "not valid JSON" in error.inner_text()
    assert kwargs.get_attribute("aria-invalid") == "true"
    kwargs.fill("[0.2]")
    page.get_by_test_id("settings-save").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=field-error-chat_kwargs]')"
        ".textContent.includes('JSON object')"
    )
    assert page.get_by_test_id("settings").is_visible()
    assert settings_file.read_text(encoding="utf-8") == before  # nothing saved, budget neither

    kwargs.fill('{"temperature": 0.2}')
    page.get_by_test_id("settings-save").click()
    page.get_by_test_id("settings-save").wait_for(state="hidden")
    saved = json.loads(settings_file.read_text(encoding="utf-8"))
    assert saved["chat_kwargs"] == {"temperature": 0.2} and saved["budget_calls"] == 7
    assert "test-key" not in json.dumps(saved) and saved["chat_model"] != "openai/chat-model"

    open_settings(page)
    assert json.loads(page.get_by_test_id("field-chat_kwargs").input_value()) == {
        "temperature": 0.2
    }
