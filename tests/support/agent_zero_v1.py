"""Agent Zero 1.x's user data, written by the tests in the formats its code writes.

Read in agent0ai/agent-zero at a 1.x commit (not copied): the models in the
`_model_config` plugin's configuration (`usr/plugins/_model_config/config.json`,
sections `chat_model`, `utility_model`, `embedding_model`), keys in `usr/.env`,
a user's plugin (`usr/plugins/<name>/plugin.yaml` with `name`, `title`,
`description`, `version`; tools, `extensions/python/<point>/`, `.toggle-1`),
another plugin's settings (`usr/plugins/<name>/config.json`), projects
(`usr/projects/<name>/.a0proj/project.json` with title, description,
instructions, color, git_url; `instructions/`, `knowledge/`, `secrets.env`,
`variables.env`, `memory/`), scheduled tasks (`usr/scheduler/tasks.json`,
`{"tasks": [...]}` with `type` scheduled/planned/adhoc) and memory areas
(`usr/memory/<area>/index.faiss` and LangChain's `index.pkl`: the pickled tuple
of an `InMemoryDocstore` whose `_dict` maps ids to `Document`s, pickled as
pydantic 2 pickles them). The contents are the tests' own.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.agent_zero_usr import chat

MODEL_CONFIG = {
    "allow_chat_override": False,
    "chat_model": {"provider": "openrouter", "name": "anthropic/claude-sonnet-4.6",
                   "api_base": "", "ctx_length": 200000, "ctx_history": 0.7, "vision": True,
                   "rl_requests": 0, "rl_input": 0, "rl_output": 0,
                   "kwargs": {"temperature": "0.2"}},
    "utility_model": {"provider": "ollama", "name": "qwen3:8b",
                      "api_base": "http://host.docker.internal:11434", "ctx_length": 32000,
                      "ctx_input": 0.7, "kwargs": {}},
    "embedding_model": {"provider": "huggingface",
                        "name": "sentence-transformers/all-MiniLM-L6-v2", "api_base": "",
                        "kwargs": {}},
}  # fmt: skip
OPENROUTER_KEY = "sk-or-v1-from-agent-zero"
PLUGIN = "weather_report"
PLUGIN_YAML = (
    f"name: {PLUGIN}\ntitle: Weather report\ndescription: Tells the weather.\nversion: 1.2.0\n"
)
PLUGIN_TOOL = (
    "from helpers.tool import Tool, Response\n\n\nclass Weather(Tool):\n"
    "    async def execute(self, **kwargs):\n"
    '        return Response(message="Sunny in Lisbon", break_loop=False)\n'
)
#: The user's own extension (usr/extensions/python/monologue_end/_50_note.py).
EXTENSION = (
    "from helpers.extension import Extension\n\n\nclass Note(Extension):\n"
    "    async def execute(self, **kwargs):\n        return None\n"
)
PROJECT = "lisbon"
PROJECT_HEADER = {
    "title": "Lisbon trip", "description": "Plan a week in Lisbon.",
    "instructions": "Answer in Portuguese when asked.", "color": "#3366ff", "git_url": "",
    "file_structure": {"enabled": True, "max_depth": 5, "max_files": 20, "max_folders": 20,
                       "max_lines": 250, "gitignore": ""},
}  # fmt: skip
PROJECT_NOTE = "Always check the tram times."
PROJECT_SECRET = {"TRAM_PASS": "tram-1234"}
#: The memories of the default area: (id, text, area).
MEMORIES = [
    ("m1AAAAAAAA", "The user prefers window seats on trains.", "main"),
    ("m2BBBBBBBB", "Fragment: the hotel is near Rossio square.", "fragments"),
    ("m3CCCCCCCC", "Solution: book the Belem tower online to skip the queue.", "solutions"),
]
KNOWLEDGE_CHUNK = ("k1DDDDDDDD", "A chunk of a knowledge file.")
PROJECT_MEMORY = ("p1EEEEEEEE", "In the Lisbon project the budget is 900 euros.")
#: A tasks.json of Agent Zero 1.x: scheduled, planned, ad hoc (switched off), one damaged.
TASK_IDS = {"scheduled": "TaskSch1", "planned": "TaskPln1", "adhoc": "TaskAdh1"}
#: A chat of the project (1.x keeps a chat's project in its context data).
PROJECT_CHAT = "ProjChat"


def task(kind: str, **extra: Any) -> dict[str, Any]:
    """One task as Agent Zero's `SchedulerTaskList.save` writes it (pydantic's JSON)."""
    uuid = extra.pop("uuid", TASK_IDS.get(kind, "TaskXxx1"))
    row = {
        "uuid": uuid, "context_id": uuid, "state": "idle", "name": f"{kind} task",
        "system_prompt": "", "prompt": f"Do the {kind} thing.", "attachments": [],
        "project_name": None, "project_color": None,
        "created_at": "2026-03-01T09:00:00Z", "updated_at": "2026-03-01T09:00:00Z",
        "last_run": None, "last_result": None, "type": kind,
    }  # fmt: skip
    if kind == "scheduled":
        row["schedule"] = {"minute": "0", "hour": "8", "day": "*", "month": "*",
                           "weekday": "1-5", "timezone": "Europe/Lisbon"}  # fmt: skip
    if kind == "planned":
        row["plan"] = {"todo": ["2099-06-03T09:00:00Z"], "in_progress": None, "done": []}
    if kind == "adhoc":
        row["token"] = "1234567890123456789"
    row.update(extra)
    return row


def tasks() -> dict[str, Any]:
    return {"tasks": [
        task("scheduled", system_prompt="You are the morning briefer.",
             project_name=PROJECT),
        task("planned"),
        task("adhoc", state="disabled", context_id="SomeChat1"),
        task("scheduled", uuid="TaskBad1", name="bad cron",
             schedule={"minute": "99", "hour": "*", "day": "*", "month": "*", "weekday": "*"}),
    ]}  # fmt: skip


@contextmanager
def _langchain_names() -> Iterator[tuple[type, type]]:
    """Classes pickled under LangChain's names, which this environment does not install:
    stand-in modules in sys.modules while the pickle is written, removed after."""
    names = ["langchain_core", "langchain_core.documents", "langchain_core.documents.base",
             "langchain_community", "langchain_community.docstore",
             "langchain_community.docstore.in_memory"]  # fmt: skip
    assert not any(n in sys.modules for n in names), "real LangChain present: use it"

    class Document:
        def __init__(self, page_content: str, metadata: dict[str, Any]) -> None:
            self.__dict__.update(id=None, metadata=metadata, page_content=page_content,
                                 type="Document")  # fmt: skip

        def __getstate__(self) -> dict[str, Any]:  # pydantic 2's BaseModel.__getstate__
            return {"__dict__": dict(self.__dict__), "__pydantic_extra__": None,
                    "__pydantic_fields_set__": {"page_content", "metadata"},
                    "__pydantic_private__": None}  # fmt: skip

    class InMemoryDocstore:
        def __init__(self, documents: dict[str, Any]) -> None:
            self._dict = documents

    for cls, module in ((Document, "langchain_core.documents.base"),
                        (InMemoryDocstore, "langchain_community.docstore.in_memory")):  # fmt: skip
        cls.__module__ = module
        cls.__qualname__ = cls.__name__
    modules = {n: types.ModuleType(n) for n in names}
    modules["langchain_core.documents.base"].Document = Document  # type: ignore[attr-defined]
    store_module = modules["langchain_community.docstore.in_memory"]
    store_module.InMemoryDocstore = InMemoryDocstore  # type: ignore[attr-defined]
    sys.modules.update(modules)
    try:
        yield Document, InMemoryDocstore
    finally:
        for name in names:
            sys.modules.pop(name, None)


def docstore_pickle(documents: list[tuple[str, str, dict[str, Any]]]) -> bytes:
    """`index.pkl` as LangChain's `FAISS.save_local` writes it, for (id, text, metadata)s."""
    with _langchain_names() as (Document, InMemoryDocstore):
        store = InMemoryDocstore({i: Document(text, meta) for i, text, meta in documents})
        positions = {n: i for n, (i, _, _) in enumerate(documents)}
        return pickle.dumps((store, positions))


class _Hostile:
    """A pickle that runs a command when loaded the usual way."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def hostile_pickle(marker: Path) -> bytes:
    return pickle.dumps((_Hostile(marker), {}))


def _memory_area(folder: Path, documents: list[tuple[str, str, dict[str, Any]]]) -> None:
    folder.mkdir(parents=True)
    (folder / "index.faiss").write_bytes(b"IxFI" + bytes(64))  # FAISS's: Cadre reads none of it
    (folder / "index.pkl").write_bytes(docstore_pickle(documents))
    (folder / "embedding.json").write_text(json.dumps(
        {"model_provider": "huggingface", "model_name": "sentence-transformers/all-MiniLM-L6-v2"}
    ))  # fmt: skip


def write_usr_v1(root: Path, marker: Path) -> Path:
    """An Agent Zero 1.x `usr/` folder under `root`; returns it. A damaged project, a task
    with a bad cron and a memory area whose pickle would run `touch <marker>` are in it:
    each is left with its reason, the rest imported."""
    usr = root / "usr"
    usr.mkdir(parents=True)
    (usr / "settings.json").write_text(json.dumps({"version": "v1.0", "mcp_server_token": "tk"}))
    (usr / ".env").write_text(f"API_KEY_OPENROUTER={OPENROUTER_KEY}\nAUTH_LOGIN=admin\n")
    config = usr / "plugins" / "_model_config"
    config.mkdir(parents=True)
    (config / "config.json").write_text(json.dumps(MODEL_CONFIG))
    (usr / "plugins" / "_memory").mkdir()
    (usr / "plugins" / "_memory" / "config.json").write_text('{"project_memory_isolation": true}')
    plugin = usr / "plugins" / PLUGIN
    (plugin / "tools").mkdir(parents=True)
    (plugin / "plugin.yaml").write_text(PLUGIN_YAML)
    (plugin / "tools" / "weather.py").write_text(PLUGIN_TOOL)
    point = plugin / "extensions" / "python" / "monologue_start"
    point.mkdir(parents=True)
    (point / "_10_hello.py").write_text(
        "from helpers.extension import Extension\n\n\nclass Hello(Extension):\n"
        "    async def execute(self, **kwargs):\n        return None\n"
    )
    (plugin / ".toggle-1").write_text("")
    own = usr / "extensions" / "python" / "monologue_end"
    own.mkdir(parents=True)
    (own / "_50_note.py").write_text(EXTENSION)
    (usr / "extensions" / "webui" / "chat-input-bottom-actions-start").mkdir(parents=True)
    (usr / "extensions" / "webui" / "chat-input-bottom-actions-start" / "b.html").write_text("<b>")
    skill = usr / "skills" / "tram-times"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: tram-times\ndescription: Look up Lisbon tram times.\n---\n# Trams\n"
    )
    project = usr / "projects" / PROJECT
    meta = project / ".a0proj"
    (meta / "instructions").mkdir(parents=True)
    (meta / "project.json").write_text(json.dumps(PROJECT_HEADER))
    (meta / "instructions" / "trams.md").write_text(PROJECT_NOTE)
    (meta / "knowledge" / "main").mkdir(parents=True)
    (meta / "knowledge" / "main" / "districts.md").write_text("# Alfama\nThe oldest district.\n")
    (meta / "secrets.env").write_text("".join(f"{k}={v}\n" for k, v in PROJECT_SECRET.items()))
    (meta / "variables.env").write_text("CITY=Lisbon\n")
    _memory_area(meta / "memory", [(PROJECT_MEMORY[0], PROJECT_MEMORY[1], {"area": "main"})])
    (project / "itinerary.md").write_text("Day 1: Alfama.\n")
    in_project = {**chat(PROJECT_CHAT, "Trams"), "data": {"project": PROJECT}}
    (usr / "chats" / PROJECT_CHAT).mkdir(parents=True)
    (usr / "chats" / PROJECT_CHAT / "chat.json").write_text(json.dumps(in_project))
    broken = usr / "projects" / "broken" / ".a0proj"
    broken.mkdir(parents=True)
    (broken / "project.json").write_text('{"title": "Broken", ')
    (usr / "scheduler").mkdir()
    (usr / "scheduler" / "tasks.json").write_text(json.dumps(tasks()))
    documents = [(i, text, {"area": area, "timestamp": "2026-03-01 09:00:00"})
                 for i, text, area in MEMORIES]  # fmt: skip
    documents.append((*KNOWLEDGE_CHUNK, {"area": "main", "knowledge_source": True}))
    _memory_area(usr / "memory" / "default", documents)
    hostile = usr / "memory" / "hostile"
    hostile.mkdir()
    (hostile / "index.faiss").write_bytes(bytes(16))
    (hostile / "index.pkl").write_bytes(hostile_pickle(marker))
    return usr
