"""Agent Zero's dotenv files and model settings read in Cadre's words."""

from __future__ import annotations

from store.agent_zero.settings import Change, Left, model_changes, parse_env


def test_dotenv_lines_as_agent_zero_reads_them():
    text = (
        "# a comment\n\n"
        "export token=abc # trailing comment\n"
        'QUOTED="two words # not a comment"  # a comment\n'
        'ESCAPED="line\\nnext \\"quoted\\""\n'
        "SINGLE='raw \\n kept' # comment\n"
        "EMPTY=\n"
        "=no name\n"
        "9LIVES=cat\n"
        "just words\n"
    )
    pairs, bad = parse_env(text)
    assert pairs == {
        "TOKEN": "abc",
        "QUOTED": "two words # not a comment",
        "ESCAPED": 'line\nnext "quoted"',
        "SINGLE": "raw \\n kept",
        "EMPTY": "",
    }
    assert bad == [8, 9, 10]


def test_models_keys_and_addresses_map_to_cadres_settings():
    a0 = {
        "chat_model_provider": "google",
        "chat_model_name": "gemini-2.5-pro",
        "chat_model_api_base": "",
        "chat_model_kwargs": {"temperature": "0.2", "stop": "END"},
        "chat_model_ctx_length": True,  # not a length: left
        "util_model_provider": "lm_studio",
        "util_model_name": "qwen3",
        "embed_model_provider": "openrouter",
        "embed_model_name": "text-embedding-3-large",
    }
    found = model_changes(a0, {"GOOGLE_API_KEY": "g-key", "API_KEY_OPENROUTER": "or-key"})
    changes = {c.field: c for c in found if isinstance(c, Change)}
    assert changes["chat_model"].value == "gemini/gemini-2.5-pro"
    assert changes["chat_kwargs"].value == {"temperature": 0.2, "stop": "END"}
    assert "chat_ctx_length" not in changes and "chat_api_base" not in changes
    assert changes["chat_api_key"].value == "g-key" and changes["chat_api_key"].secret
    assert changes["util_model"].value == "lm_studio/qwen3"
    assert changes["util_api_base"].value == "http://localhost:1234/v1"
    assert changes["embed_model"].value == "openai/text-embedding-3-large"
    assert changes["embed_api_base"].value == "https://openrouter.ai/api/v1"
    assert changes["embed_api_key"].value == "or-key"
    assert not [c for c in found if isinstance(c, Left)]
