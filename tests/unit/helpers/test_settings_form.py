"""The settings form is declared with the fields: every field has a label, a hint, a
heading and the control its type calls for; the environment's overrides are marked."""

from __future__ import annotations

import typing

from helpers.settings import GROUPS, Settings
from helpers.settings_form import form_description, form_fields, secret_fields


def test_every_field_has_a_title_a_one_line_description_and_a_heading():
    missing = [
        name for name, info in Settings.model_fields.items()
        if not (info.title and info.description and (info.json_schema_extra or {}).get("group"))
    ]  # fmt: skip
    assert missing == [], f"declare title, description and group with about(...): {missing}"
    for field in form_fields():
        assert field.group in GROUPS, field.name
        assert "\n" not in field.description and len(field.description) <= 120, field.name
        assert field.title != field.name.replace("_", " "), field.name


def test_each_type_gets_its_control():
    fields = {f.name: f for f in form_fields()}
    for name, info in Settings.model_fields.items():
        kind = fields[name].kind
        if info.annotation is bool:
            assert kind == "bool", name
        elif info.annotation in (int, float):
            assert kind == "number" and fields[name].unit, f"{name}: a number needs its unit"
        elif typing.get_origin(info.annotation) is typing.Literal:
            assert kind == "choice", name
        elif name.endswith("_kwargs"):
            assert kind == "json", name
    structured = fields["structured_output"]
    assert [o.value for o in structured.options] == ["auto", "on", "off"]
    assert all(o.label for o in structured.options)
    assert fields["allowed_hosts"].kind == "lines" and fields["secrets"].kind == "secrets"
    assert fields["llm_retry_delay"].unit == "s"
    assert fields["llm_max_reply_chars"].unit == "characters"


def test_number_bounds_follow_the_fields_rules():
    fields = {f.name: f for f in form_fields()}
    assert (fields["llm_retries"].minimum, fields["llm_retries"].step) == (0, "1")
    assert fields["chat_ctx_length"].minimum == 1  # gt=0 on a whole number
    assert (fields["history_ratio"].minimum, fields["history_ratio"].maximum) == (0, 1)
    assert fields["history_ratio"].step == "any" and fields["local_ctx_length"].minimum == 512


def test_secret_fields_are_the_keys_and_the_passwords():
    assert secret_fields() == {
        "chat_api_key", "util_api_key", "embed_api_key", "api_key", "auth_password",
        "oidc_client_secret", "tracing_headers", "stt_api_key", "tts_api_key",
        "telegram_bot_token",
    }  # fmt: skip
    assert all(f.secret == (f.name in secret_fields()) for f in form_fields())


def test_a_field_the_environment_sets_names_its_variable(monkeypatch):
    monkeypatch.setenv("CADRE_CHAT_MODEL", "openai/gpt-4.1-mini")
    described = form_description()
    env = {f["name"]: f["env"] for f in described["fields"] if f["env"]}
    assert env == {"chat_model": "CADRE_CHAT_MODEL"}
    assert described["groups"][0] == "Model" and "More" not in described["groups"]
