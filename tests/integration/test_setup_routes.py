"""The setup's routes against the fake provider: a model that fails its test is not saved
(unless forced), each failure is said in plain words with the fix, the provider's model
list is fetched, and the embedding model is set alongside."""

from __future__ import annotations

import json

import pytest

from tests.support.fake_llm import Fail, Reply

NOWHERE = "http://127.0.0.1:9/v1"


@pytest.fixture
def stored(usr_dir):
    def read() -> dict:
        path = usr_dir / "settings.json"
        return json.loads(path.read_text()) if path.exists() else {}

    return read


def compatible(llm, **changes) -> dict:
    return {"provider": "compatible", "model": "openai/chat-model", "api_base": llm.base_url,
            **changes}  # fmt: skip


def test_the_provider_prefix_is_added_and_the_real_problem_said(http, llm, stored):
    """The dialog knows the provider: "fake" at a URL where no server answers was refused
    for lacking its openai/ prefix, which hid the real problem."""
    refused = http.post("/api/setup/test", json=compatible(llm, model="fake", api_base=NOWHERE))
    assert refused.json["problem"]["kind"] == "unreachable", refused.json
    assert f"No server answers at {NOWHERE}." in refused.json["problem"]["headline"]
    llm.script(Reply("OK"))
    saved = http.post("/api/setup/save", json=compatible(llm, model="chat-model")).json
    assert saved["ok"] is True and saved["chat_model"] == "openai/chat-model", saved
    assert llm.chat_requests()[0].body["model"] == "chat-model"
    # A name the server gives with a slash of its own (vLLM serves org/model) keeps it.
    llm.script(Reply("OK"))
    named = compatible(llm, model="meta-llama/Llama-3.1-8B", embed_model="nomic-embed")
    assert http.post("/api/setup/save", json=named).json["ok"] is True
    settings = stored()
    assert settings["chat_model"] == "openai/meta-llama/Llama-3.1-8B"
    assert settings["embed_model"] == "openai/nomic-embed"


def test_save_anyway_stores_a_failing_model(http, llm, stored):
    forced = http.post("/api/setup/save", json=compatible(llm, model="chat-model", force=True))
    assert forced.json["ok"] is True and stored()["chat_model"] == "openai/chat-model"
    assert llm.chat_requests() == []  # the person insisted: no test call


@pytest.mark.parametrize(
    ("script", "base", "kind", "words"),
    [
        (Fail(status=401, message="bad key"), None, "key", "refused the API key"),
        (Fail(status=404, message="model_not_found"), None, "model", "unknown to the provider"),
        (None, NOWHERE, "unreachable", f"No server answers at {NOWHERE}."),
    ],
)
def test_save_tests_first_and_says_what_failed(http, llm, stored, script, base, kind, words):
    if script is not None:
        llm.script(script)
    choice = compatible(llm, api_key="sk-test", **({"api_base": base} if base else {}))
    refused = http.post("/api/setup/save", json=choice).json
    assert refused["ok"] is False and refused["problem"]["kind"] == kind
    assert words in refused["problem"]["headline"]
    assert "chat_model" not in stored()


def test_a_working_model_is_saved_with_keyword_memory(http, llm, stored):
    llm.script(Reply("OK"))
    saved = http.post("/api/setup/save", json=compatible(llm)).json
    assert saved["ok"] is True and saved["chat_model"] == "openai/chat-model"
    [call] = llm.chat_requests()  # save ran the test call itself
    assert call.body["max_tokens"] == 1
    settings = stored()
    assert settings["chat_api_base"] == llm.base_url
    # No embedding model named: memory uses keywords, not OpenAI with no key.
    assert settings["embed_model"] == "" and settings["embed_api_key"] == ""


def test_save_after_a_passed_test_calls_the_provider_once(http, llm, stored):
    llm.script(Reply("OK"))
    assert http.post("/api/setup/test", json=compatible(llm)).json["ok"] is True
    saved = http.post("/api/setup/save", json=compatible(llm)).json
    assert saved["ok"] is True and stored()["chat_model"] == "openai/chat-model"
    assert len(llm.chat_requests()) == 1  # the test's verdict stood for the save


def test_a_changed_choice_is_tested_again_on_save(http, llm, stored):
    llm.script(Reply("OK"))
    assert http.post("/api/setup/test", json=compatible(llm)).json["ok"] is True
    refused = http.post("/api/setup/save", json=compatible(llm, api_base=NOWHERE)).json
    assert refused["ok"] is False and refused["problem"]["kind"] == "unreachable"
    assert "chat_model" not in stored()


def test_the_embedding_model_is_set_alongside(http, llm, stored):
    llm.script(Reply("OK"))
    choice = compatible(llm, api_key="k", embed_model="openai/embed-model")
    assert http.post("/api/setup/save", json=choice).json["ok"] is True
    settings = stored()
    assert settings["embed_model"] == "openai/embed-model"
    assert settings["embed_api_base"] == llm.base_url and settings["embed_api_key"] == "k"


def test_the_model_list_is_fetched_from_the_provider(http, llm):
    llm.models = ["alpha", "beta"]
    listed = http.post("/api/setup/models", json=compatible(llm)).json
    assert listed == {"models": ["openai/alpha", "openai/beta"], "problem": None}
    ollama_base = llm.base_url.removesuffix("/v1")
    tags = http.post("/api/setup/models", json={"provider": "ollama", "api_base": ollama_base})
    assert tags.json["models"] == ["ollama/alpha", "ollama/beta"]


def test_a_model_list_that_fails_says_why(http, llm):
    llm.models_failure = 401
    refused = http.post("/api/setup/models", json=compatible(llm, api_key="nope")).json
    assert refused["models"] == [] and refused["problem"]["kind"] == "key"
    nobody = http.post("/api/setup/models", json=compatible(llm, api_base=NOWHERE)).json
    assert nobody["problem"]["kind"] == "unreachable"


def test_every_provider_has_a_key_field_and_examples(http):
    providers = {p["name"]: p for p in http.get("/api/setup").json["providers"]}
    for name, provider in providers.items():
        if name in ("local", "embedded"):
            continue
        assert provider["key_field"] and provider["key_example"], name
        assert provider["model_example"], name
        assert provider["embed_model"] or provider["embed_note"], name
        if provider["needs_url"]:
            assert provider["url_example"], name
    assert providers["compatible"]["url_example"] == "http://localhost:8000/v1"
    assert not providers["compatible"]["needs_key"]
