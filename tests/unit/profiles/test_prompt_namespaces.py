"""`{{ns.key}}` in prompt files: a namespace read from the render's context (`ctx`)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from helpers import file_snapshot
from helpers.errors import PromptError
from profiles.prompts import PromptLoader


@dataclass
class Chat:
    """Stands for an agent: what the `ctx` namespace reads is its chat's variables."""

    variables: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def base(tmp_path: Path) -> Path:
    folder = tmp_path / "prompts"
    folder.mkdir()
    return folder


@pytest.fixture
def loader(base: Path) -> PromptLoader:
    return PromptLoader([base], namespaces={"ctx": lambda chat: chat.variables})


def render(loader: PromptLoader, base: Path, text: str, chat: Chat) -> str:
    (base / "t.md").write_text(text, encoding="utf-8")
    return loader.render("t.md", context=chat)


def test_a_key_of_the_namespace_is_its_value(loader: PromptLoader, base: Path) -> None:
    chat = Chat({"customer": "ACME", "tier": "gold"})
    out = render(loader, base, "For {{ctx.customer}} ({{ ctx.tier }}).", chat)
    assert out == "For ACME (gold)."


def test_a_missing_key_in_text_names_it_and_the_way_out(loader: PromptLoader, base: Path) -> None:
    with pytest.raises(PromptError) as err:
        render(loader, base, "line one\nFor {{ctx.customer}}.", Chat())
    message = str(err.value)
    assert "{{ctx.customer}} is not set (line 2)" in message
    assert "{{if ctx.customer}}" in message


def test_a_condition_on_a_missing_or_empty_key_is_false(loader: PromptLoader, base: Path) -> None:
    text = "{{if ctx.customer}}\nFor {{ctx.customer}}.\n{{else}}\nNo customer.\n{{endif}}"
    assert render(loader, base, text, Chat()) == "No customer."
    assert render(loader, base, text, Chat({"customer": ""})) == "No customer."
    assert render(loader, base, text, Chat({"customer": "ACME"})) == "For ACME."
    assert render(loader, base, "{{if not ctx.x}}none{{endif}}", Chat()) == "none"


def test_an_unknown_namespace_is_an_error(base: Path) -> None:
    (base / "t.md").write_text("{{user.name}}", encoding="utf-8")
    with pytest.raises(PromptError, match=r"unknown namespace 'user'.*known namespaces: none"):
        PromptLoader([base]).render("t.md")


def test_json_with_dotted_keys_is_no_tag(loader: PromptLoader, base: Path) -> None:
    text = '{"ctx.a": 1} {{"ctx.b": 2}}'
    assert render(loader, base, text, Chat()) == text


def test_a_built_text_depends_on_the_values_it_read(loader: PromptLoader, base: Path) -> None:
    """A render inside a snapshot records each key it read: asked for the same chat or
    another, the result is reusable only while the key has the value it had."""
    path = base / "t.md"
    path.write_text("{{ctx.customer}}{{if ctx.region}}{{ctx.region}}{{endif}}", encoding="utf-8")
    for written in (path, base):  # long settled: a racy stamp would never be trusted
        os.utime(written, (time.time() - 60, time.time() - 60))
    chat = Chat({"customer": "ACME", "unused": "1"})
    with file_snapshot.snapshot() as seen:
        assert loader.render("t.md", context=chat) == "ACME"
    assert seen.unchanged()
    chat.variables = {"customer": "ACME", "unused": "2"}  # a key no prompt reads
    assert seen.unchanged()
    assert seen.unchanged(Chat({"customer": "ACME"}))
    assert not seen.unchanged(Chat({"customer": "Initech"}))
    assert not seen.unchanged(Chat({"customer": "ACME", "region": "EU"}))
    chat.variables = {"customer": "Initech"}
    assert not seen.unchanged()
