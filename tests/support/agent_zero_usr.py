"""Agent Zero's user data, written by the tests in Agent Zero's own formats.

What Agent Zero (agent0ai/agent-zero) keeps under its `usr/` folder, built
from what its code writes (read there, not copied): a chat file as its
`persist_chat` saves it (ISO dates, the agent chain, each agent's history as
a JSON *string* of topics, bulks and messages whose content carries Agent
Zero's markers, the log under `logs`), a profile folder, knowledge files,
`secrets.env`, the model keys' `.env` and `settings.json` with its model
fields. The contents are the tests' own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CHAT_ID = "Lx7Qa2Vb"
CHAT_NAME = "Lisbon trip"
#: What the old turns say: a test looks for these in the model's next request.
OLD_QUESTION = "Which museum should I visit in Lisbon on Monday?"
OLD_ANSWER = "The Gulbenkian Museum is open on Mondays."
OLD_TOOL_RESULT = "Gulbenkian: open daily except Tuesday, 10:00-18:00."
OLD_SUMMARY = "Earlier the user booked a flight to Lisbon for 3 June."
SUBORDINATE_TASK = "Find the museums open on Monday."
SECRETS = {"GITHUB_TOKEN": "ghp_from_agent_zero_123", "DB_PASSWORD": "p4ss-w0rd-xyz"}


def message(ai: bool, content: Any, summary: str = "") -> dict[str, Any]:
    """One history message as Agent Zero's `Message.to_dict` writes it."""
    return {"_cls": "Message", "ai": ai, "content": content, "summary": summary, "tokens": 10}


def topic(*messages: dict[str, Any], summary: str = "") -> dict[str, Any]:
    return {"_cls": "Topic", "summary": summary, "messages": list(messages)}


def history(
    current: dict[str, Any], topics: list[dict[str, Any]] = (), bulks: list[dict[str, Any]] = ()
) -> str:
    """An agent's history as Agent Zero stores it: JSON text inside the chat's JSON."""
    data = {
        "_cls": "History",
        "counter": 7,
        "bulks": list(bulks),
        "topics": list(topics),
        "current": current,
    }
    return json.dumps(data, ensure_ascii=False)


def reply_text(tool: str, **args: Any) -> str:
    """The model's reply as Agent Zero keeps it: the raw JSON text the model wrote."""
    return json.dumps(
        {
            "thoughts": [f"use {tool}"],
            "headline": f"Using {tool}",
            "tool_name": tool,
            "tool_args": args,
        }  # fmt: skip
    )


def log_item(no: int, kind: str, heading: str = "", content: str = "", **kvps: Any) -> dict:
    """One log item as Agent Zero's `LogItem.output` writes it."""
    return {"no": no, "id": None, "type": kind, "heading": heading, "content": content,
            "temp": False, "kvps": kvps or None}  # fmt: skip


def chat(chat_id: str = CHAT_ID, name: str = CHAT_NAME) -> dict[str, Any]:
    """A whole Agent Zero chat: Agent 0 and a subordinate, a summarised bulk, an old topic
    with a tool call, the current topic with an intervention, a warning and an image."""
    agent0 = history(
        bulks=[{"_cls": "Bulk", "summary": OLD_SUMMARY,
                "records": [topic(message(False, {"user_message": "Book a flight."}))]}],
        topics=[
            topic(
                message(False, {"user_message": OLD_QUESTION}),
                message(True, reply_text("call_subordinate", message=SUBORDINATE_TASK,
                                         reset="true")),
                message(False, {"tool_name": "call_subordinate", "tool_result": OLD_TOOL_RESULT}),
                message(True, reply_text("response", text=OLD_ANSWER)),
            )
        ],
        current=topic(
            message(False, {"user_message": "And on Tuesday?",
                            "attachments": ["/a0/usr/uploads/map.png"]}),
            message(False, {"user_intervention": "Only free ones, please."}),
            message(False, {"system_warning": "You have misformatted your message."}),
            message(False, {"raw_content": [{"type": "image_url", "image_url": {"url": "data:"}}],
                            "preview": "<screenshot of the map>"}),
            message(True, reply_text("response", text="The MAAT is free on the first Sunday.")),
        ),
    )  # fmt: skip
    agent1 = history(
        current=topic(
            message(False, {"user_message": SUBORDINATE_TASK}),
            message(True, reply_text("response", text=OLD_TOOL_RESULT)),
        )
    )
    logs = [
        log_item(0, "user", "", OLD_QUESTION, attachments=[]),
        log_item(1, "agent", "A0: Delegating", "", thoughts=["ask a researcher"]),
        log_item(2, "tool", "A0: Using tool 'call_subordinate'", "", tool_name="call_subordinate"),
        log_item(3, "util", "Memorizing", "done"),
        log_item(4, "browser", "A1: Browsing", "gulbenkian.pt"),
        log_item(5, "response", "A0: Responding", OLD_ANSWER),
        log_item(6, "mcp", "A0: MCP call", "x"),
        {**log_item(7, "progress", "Thinking", ""), "temp": True},
    ]
    return {
        "id": chat_id,
        "name": name,
        "created_at": "2025-06-01T10:15:00.123456",
        "type": "user",
        "last_message": "2025-06-01T10:20:30+00:00",
        "agents": [
            {"number": 0, "data": {"iteration_no": 4}, "history": agent0},
            {"number": 1, "data": {}, "history": agent1},
        ],
        "streaming_agent": 0,
        "log": {"guid": "6b3c-guid", "logs": logs, "progress": "Done", "progress_no": 6},
        "data": {},
        "output_data": {},
    }


PROFILE_JSON = {"title": "Travel planner", "description": "Plans trips.", "context": "Trips."}
ROLE = "## Your role\nYou plan trips for the user."


#: A skill in the open SKILL.md format, as Agent Zero keeps them in usr/skills/.
SKILL = (
    "---\nname: trip-planning\ndescription: Plan a trip day by day within a budget.\n---\n"
    "# Trip planning\nList the days, then the costs.\n"
)


def write_usr(root: Path, *, damaged_chat: bool = True, hostile: bool = True) -> Path:
    """An Agent Zero `usr/` folder under `root`; returns it.

    It holds two chats (one damaged unless told not to), a profile folder, a skill, knowledge
    files (one of a kind Cadre does not read), secrets.env, .env with model keys and
    settings.json; `hostile` adds names a migration must refuse (a profile and a
    knowledge file that are links out of the folder, a chat folder named like a parent)."""
    usr = root / "usr"
    chats = usr / "chats"
    (chats / CHAT_ID).mkdir(parents=True)
    (chats / CHAT_ID / "chat.json").write_text(json.dumps(chat()), encoding="utf-8")
    (chats / "Second01").mkdir()
    (chats / "Second01" / "chat.json").write_text(
        json.dumps(chat("Second01", "Second chat")), encoding="utf-8"
    )
    if damaged_chat:
        (chats / "Broken99").mkdir()
        (chats / "Broken99" / "chat.json").write_text('{"id": "Broken99", "agents": [', "utf-8")
    profile = usr / "agents" / "travel"
    (profile / "prompts").mkdir(parents=True)
    (profile / "agent.json").write_text(json.dumps(PROFILE_JSON), encoding="utf-8")
    (profile / "prompts" / "agent.system.main.role.md").write_text(ROLE, encoding="utf-8")
    skill = usr / "skills" / "trip-planning"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL, encoding="utf-8")
    knowledge = usr / "knowledge" / "main"
    knowledge.mkdir(parents=True)
    (knowledge / "lisbon.md").write_text("# Lisbon\nTrams run until midnight.\n", "utf-8")
    (knowledge / "notes.txt").write_text("Pack an umbrella.\n", "utf-8")
    (knowledge / "archive.zip").write_bytes(b"PK\x03\x04")
    (usr / "secrets.env").write_text(
        "# my secrets\n"
        f"GITHUB_TOKEN={SECRETS['GITHUB_TOKEN']}\n"
        f'db_password="{SECRETS["DB_PASSWORD"]}"  # lower case: Agent Zero upper-cases keys\n'
        "not a pair\n",
        encoding="utf-8",
    )
    (usr / ".env").write_text("API_KEY_OPENROUTER=sk-or-from-a0\nAUTH_LOGIN=admin\n", "utf-8")
    (usr / "settings.json").write_text(json.dumps(settings()), encoding="utf-8")
    if hostile:
        outside = root / "outside"
        outside.mkdir()
        (outside / "agent.json").write_text(json.dumps(PROFILE_JSON), encoding="utf-8")
        (usr / "agents" / "escape").symlink_to(outside, target_is_directory=True)
        (knowledge / "leak.md").symlink_to(outside / "agent.json")
        (chats / "..evil").mkdir()
        (chats / "..evil" / "chat.json").write_text(json.dumps(chat("..evil")), "utf-8")
    return usr


def settings() -> dict[str, Any]:
    """Agent Zero's settings.json with its model fields (and some Cadre has no use for)."""
    return {
        "version": "v0.9.7",
        "chat_model_provider": "openrouter",
        "chat_model_name": "anthropic/claude-sonnet-4",
        "chat_model_api_base": "",
        "chat_model_kwargs": {"temperature": "0"},
        "chat_model_ctx_length": 100000,
        "util_model_provider": "ollama",
        "util_model_name": "qwen2.5:7b",
        "util_model_api_base": "http://host.docker.internal:11434",
        "util_model_kwargs": {},
        "embed_model_provider": "huggingface",
        "embed_model_name": "sentence-transformers/all-MiniLM-L6-v2",
        "embed_model_api_base": "",
        "agent_profile": "agent0",
        "mcp_server_token": "a0-token",
    }
