"""`python3 cadre.py import-agent-zero <usr>`: an Agent Zero user's data moves in.

Run as the user runs it, a real subprocess, on an Agent Zero `usr/` folder
the tests build in Agent Zero's formats (tests/support/agent_zero_usr.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.files import BASE_DIR
from profiles.skills import discover_skills
from store import persist_chat
from tests.support import agent_zero_usr as a0


def migrate(usr_dir: Path, source: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRE_")}
    env["CADRE_USR_DIR"] = str(usr_dir)
    return subprocess.run(
        [sys.executable, str(BASE_DIR / "cadre.py"), "import-agent-zero", str(source), *flags],
        env=env, capture_output=True, text=True, timeout=180, cwd=BASE_DIR,
    )  # fmt: skip


def stored_settings(usr_dir: Path) -> dict:
    return json.loads((usr_dir / "settings.json").read_text())


def test_chats_profiles_knowledge_secrets_and_models_come_over(tmp_path, usr_dir):
    source = a0.write_usr(tmp_path / "a0")

    run = migrate(usr_dir, source)

    assert run.returncode == 0, run.stderr
    out = run.stdout
    # Chats: converted, the damaged one and the hostile name left with a reason.
    chat = persist_chat.read_chat(a0.CHAT_ID)
    assert chat.name == a0.CHAT_NAME and len(chat.agents) == 2
    assert persist_chat.read_chat("Second01").name == "Second chat"
    assert f"chat {a0.CHAT_ID}" in out and "Broken99" in out and "..evil" in out
    assert not (usr_dir / "chats" / "Broken99").exists()
    assert not (usr_dir / "chats" / "..evil").exists() and not (usr_dir / "evil").exists()
    # Profiles copied as they are; a link out of the folder refused.
    copied = usr_dir / "agents" / "travel"
    assert json.loads((copied / "agent.json").read_text()) == a0.PROFILE_JSON
    assert (copied / "prompts" / "agent.system.main.role.md").read_text() == a0.ROLE
    assert not (usr_dir / "agents" / "escape").exists() and "escape" in out
    # Skills (the same SKILL.md format) copied as they are, and offered.
    assert (usr_dir / "skills" / "trip-planning" / "SKILL.md").read_text() == a0.SKILL
    assert "skill trip-planning" in out
    assert discover_skills()["trip-planning"].usable
    # Knowledge: what Cadre reads, where it was; the rest named with why.
    assert (usr_dir / "knowledge" / "main" / "lisbon.md").is_file()
    assert (usr_dir / "knowledge" / "main" / "notes.txt").is_file()
    assert not (usr_dir / "knowledge" / "main" / "archive.zip").exists()
    assert "main/archive.zip" in out
    assert not (usr_dir / "knowledge" / "main" / "leak.md").exists() and "main/leak.md" in out
    # Secrets and models into Cadre's settings; no secret value printed.
    settings = stored_settings(usr_dir)
    assert settings["secrets"] == a0.SECRETS
    assert settings["chat_model"] == "openrouter/anthropic/claude-sonnet-4"
    assert settings["chat_api_key"] == "sk-or-from-a0"
    assert settings["chat_ctx_length"] == 100000 and settings["chat_kwargs"] == {"temperature": 0}
    assert settings["util_model"] == "ollama/qwen2.5:7b"
    assert settings["util_api_base"] == "http://localhost:11434"
    assert settings["api_key"] == "a0-token"
    assert settings["embed_model"] == "openai/text-embedding-3-small"  # kept, with a reason
    assert "embed_model" in out and "huggingface" in out
    for value in [*a0.SECRETS.values(), "sk-or-from-a0", "a0-token"]:
        assert value not in out and value not in run.stderr
    assert "done" in out and "skipped" in out


def test_nothing_of_cadres_is_overwritten_without_the_flag(tmp_path, usr_dir):
    source = a0.write_usr(tmp_path / "a0", damaged_chat=False, hostile=False)
    mine = usr_dir / "agents" / "travel"
    mine.mkdir(parents=True)
    (mine / "agent.json").write_text('{"title": "mine"}')
    (usr_dir / "knowledge" / "main").mkdir(parents=True)
    (usr_dir / "knowledge" / "main" / "lisbon.md").write_text("mine")
    own = {"chat_model": "openai/gpt-4.1", "secrets": {"GITHUB_TOKEN": "cadre-own-token"}}
    (usr_dir / "settings.json").write_text(json.dumps(own))
    first = migrate(usr_dir, source)
    assert first.returncode == 0, first.stderr
    chat_file = usr_dir / "chats" / a0.CHAT_ID / "chat.json"
    chat_file.write_text(chat_file.read_text().replace(a0.CHAT_NAME, "Renamed in Cadre"))

    again = migrate(usr_dir, source)

    assert again.returncode == 0, again.stderr
    assert (mine / "agent.json").read_text() == '{"title": "mine"}'
    assert (usr_dir / "knowledge" / "main" / "lisbon.md").read_text() == "mine"
    settings = stored_settings(usr_dir)
    assert settings["chat_model"] == "openai/gpt-4.1"
    assert settings["secrets"] == {"GITHUB_TOKEN": "cadre-own-token",
                                   "DB_PASSWORD": a0.SECRETS["DB_PASSWORD"]}  # fmt: skip
    assert persist_chat.read_chat(a0.CHAT_ID).name == "Renamed in Cadre"
    assert "--overwrite" in again.stdout

    forced = migrate(usr_dir, source, "--overwrite")

    assert forced.returncode == 0, forced.stderr
    assert json.loads((mine / "agent.json").read_text()) == a0.PROFILE_JSON
    assert (usr_dir / "knowledge" / "main" / "lisbon.md").read_text().startswith("# Lisbon")
    settings = stored_settings(usr_dir)
    assert settings["chat_model"] == "openrouter/anthropic/claude-sonnet-4"
    assert settings["secrets"] == a0.SECRETS
    assert persist_chat.read_chat(a0.CHAT_ID).name == a0.CHAT_NAME


def test_a_folder_that_is_not_agent_zeros_is_refused(tmp_path, usr_dir):
    run = migrate(usr_dir, tmp_path / "nowhere")

    assert run.returncode == 2
    assert "nowhere" in run.stdout + run.stderr and "Agent Zero" in run.stdout + run.stderr
    assert not (usr_dir / "settings.json").exists()
