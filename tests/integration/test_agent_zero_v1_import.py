"""`python3 cadre.py import-agent-zero <usr>` on an Agent Zero 1.x installation.

A real subprocess on a 1.x `usr/` folder the test builds in Agent Zero's formats
(tests/support/agent_zero_v1.py): models from the `_model_config` plugin, the
user's plugin copied unchanged, skills, projects, scheduled tasks and the memory
texts (embedded again through the fake model server's embeddings); damaged parts
left with their reason; a second run changes nothing and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.files import BASE_DIR
from memory.store import MemoryStore, area_path
from profiles.project_store import update_project
from profiles.projects import load_project_secrets, load_project_settings
from scheduler.agent_zero import import_tasks
from scheduler.store import TaskStore
from store import persist_chat
from store.agent_zero.usr import migrate as migrate_in_process
from tests.support import agent_zero_v1 as v1

EMBED = "openai/embed-model"


def migrate(usr_dir: Path, source: Path, base_url: str, *flags: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRE_")}
    env.update(CADRE_USR_DIR=str(usr_dir), CADRE_EMBED_MODEL=EMBED,
               CADRE_EMBED_API_BASE=base_url, CADRE_EMBED_API_KEY="test-key")  # fmt: skip
    return subprocess.run(
        [sys.executable, str(BASE_DIR / "cadre.py"), "import-agent-zero", str(source), *flags],
        env=env, capture_output=True, text=True, timeout=180, cwd=BASE_DIR,
    )  # fmt: skip


def snapshot(usr_dir: Path) -> dict[str, bytes]:
    """Every file of Cadre's usr/ but SQLite's own (a read may touch its journal)."""
    return {
        p.relative_to(usr_dir).as_posix(): p.read_bytes()
        for p in sorted(usr_dir.rglob("*"))
        if p.is_file() and ".db" not in p.name
    }


def test_a_1x_installation_moves_in_and_a_second_run_changes_nothing(tmp_path, usr_dir, llm):
    marker = tmp_path / "pickle-ran-a-command"
    source = v1.write_usr_v1(tmp_path / "a0", marker)

    run = migrate(usr_dir, source, llm.base_url)

    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "Agent Zero 1.x" in out
    # Models from the _model_config plugin; the key from usr/.env, never printed.
    settings = json.loads((usr_dir / "settings.json").read_text())
    assert settings["chat_model"] == "openrouter/anthropic/claude-sonnet-4.6"
    assert settings["chat_api_key"] == v1.OPENROUTER_KEY
    assert settings["chat_kwargs"] == {"temperature": 0.2}
    assert settings["chat_ctx_length"] == 200000
    assert settings["util_model"] == "ollama/qwen3:8b"
    assert settings["util_api_base"] == "http://localhost:11434"
    assert "embed_model" in out and "huggingface" in out  # Cadre keeps its own, with why
    assert v1.OPENROUTER_KEY not in out + run.stderr
    # The user's plugin copied unchanged (its on/off mark too) and listed; another
    # plugin's settings left with why.
    plugin = usr_dir / "plugins" / v1.PLUGIN
    for part in ("plugin.yaml", "tools/weather.py", ".toggle-1",
                 "extensions/python/monologue_start/_10_hello.py"):  # fmt: skip
        assert (plugin / part).read_bytes() == (source / "plugins" / v1.PLUGIN / part).read_bytes()
    assert f"plugin {v1.PLUGIN}" in out and "Plugins panel" in out
    assert "plugins/_memory" in out and not (usr_dir / "plugins" / "_memory").exists()
    assert (usr_dir / "skills" / "tram-times" / "SKILL.md").is_file()
    # The user's own extensions where Cadre looks for them; the page's left with why.
    assert (usr_dir / "extensions" / "monologue_end" / "_50_note.py").read_text() == v1.EXTENSION
    assert "extensions/webui" in out and not (usr_dir / "extensions" / "webui").exists()
    # The project, with its instructions, secrets, knowledge, work files and memory.
    project = load_project_settings(v1.PROJECT)
    assert project.description == "Lisbon trip: Plan a week in Lisbon."
    assert v1.PROJECT_HEADER["instructions"] in project.instructions
    assert v1.PROJECT_NOTE in project.instructions
    assert load_project_secrets(v1.PROJECT) == v1.PROJECT_SECRET
    folder = usr_dir / "projects" / v1.PROJECT
    assert (folder / "knowledge" / "main" / "districts.md").is_file()
    assert (folder / "work" / "itinerary.md").read_text() == "Day 1: Alfama.\n"
    assert persist_chat.read_chat(v1.PROJECT_CHAT).project == v1.PROJECT
    assert "variables.env" in out
    assert "project broken" in out and "damaged" in out
    assert not (usr_dir / "projects" / "broken").exists()
    # Tasks: of their kinds and ids; the bad cron left with why.
    tasks = {t.id: t for t in TaskStore().all()}
    assert set(tasks) == set(v1.TASK_IDS.values())
    morning = tasks[v1.TASK_IDS["scheduled"]]
    assert morning.cron == "0 8 * * 1-5" and morning.timezone == "Europe/Lisbon"
    assert morning.project == v1.PROJECT and morning.prompt.startswith("You are the morning")
    assert tasks[v1.TASK_IDS["planned"]].next_run is not None
    adhoc = tasks[v1.TASK_IDS["adhoc"]]
    assert not adhoc.enabled and not adhoc.dedicated_chat
    assert "'bad cron'" in out
    # Memory texts, their kinds, embedded again with Cadre's model; knowledge chunks not.
    area = MemoryStore(area_path("default"))
    assert sorted((m.text, m.kind) for m in area.all()) == sorted(
        (text, kind) for _, text, kind in v1.MEMORIES
    )
    assert area.needs_reindex(EMBED) == []
    embedded = [text for r in llm.embedding_requests() for text in r.body["input"]]
    assert {text for _, text, _ in v1.MEMORIES} <= set(embedded)
    assert "memory default: 3 memories imported" in out and "3 embedded again" in out
    assert [m.text for m in MemoryStore(area_path(v1.PROJECT)).all()] == [v1.PROJECT_MEMORY[1]]
    # The pickle that would run a command is refused by name; nothing ran.
    assert "memory hostile" in out and "posix.system" in out
    assert not marker.exists()

    before = snapshot(usr_dir)
    again = migrate(usr_dir, source, llm.base_url)

    assert again.returncode == 0, again.stderr
    assert "done (0)" in again.stdout and "Nothing changed in Cadre." in again.stdout
    assert snapshot(usr_dir) == before
    assert len(MemoryStore(area_path("default")).all()) == len(v1.MEMORIES)


def test_cadres_own_changes_stay_unless_overwrite_is_given(tmp_path, usr_dir, llm):
    source = v1.write_usr_v1(tmp_path / "a0", tmp_path / "marker")
    steps = {"scheduler": import_tasks}
    migrate_in_process(source, False, steps)
    update_project(v1.PROJECT, {"description": "Mine now"})
    TaskStore().update(v1.TASK_IDS["planned"], lambda t: t.model_copy(update={"name": "Mine"}))
    (usr_dir / "plugins" / v1.PLUGIN / "plugin.yaml").write_text("name: mine\n")

    kept = migrate_in_process(source, False, steps)

    assert load_project_settings(v1.PROJECT).description == "Mine now"
    assert TaskStore().get(v1.TASK_IDS["planned"]).name == "Mine"
    assert (usr_dir / "plugins" / v1.PLUGIN / "plugin.yaml").read_text() == "name: mine\n"
    assert sum("--overwrite" in line for line in kept.skipped) >= 3 and not kept.done

    replaced = migrate_in_process(source, True, steps)

    assert load_project_settings(v1.PROJECT).description.startswith("Lisbon trip")
    assert TaskStore().get(v1.TASK_IDS["planned"]).name == "planned task"
    assert (usr_dir / "plugins" / v1.PLUGIN / "plugin.yaml").read_text() == v1.PLUGIN_YAML
    assert replaced.done
    # Memories are never doubled, with --overwrite either.
    assert len(MemoryStore(area_path("default")).all()) == len(v1.MEMORIES)
