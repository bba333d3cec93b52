"""Agent Zero profile folders and tools, written in Agent Zero's formats for tests.

Agent Zero keeps a profile in `agents/<name>/`: `agent.yaml` (newer releases) or
`agent.json` (what its settings UI saves) with `title`, `description`, `context`
and `enabled`, and a `prompts/` folder whose files replace the framework's by
name. Its main prompt is built from section files: `agent.system.main.role.md`,
`agent.system.main.specifics.md` (a profile's persona), `...communication.md`
(which ends by including `...communication_additions.md`), `...solving.md`,
`...tips.md`. Its tools subclass `python.helpers.tool.Tool`, read `self.args`,
implement `async def execute(self, **kwargs)` and return
`Response(message=..., break_loop=...)`; each has a prompt file
`agent.system.tool.<name>.md`.

These files are written here for the tests (not copied from Agent Zero), each
with a marker text a test can look for in the prompts the fake model received.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

DEVELOPER_SPECIFICS = "A0-DEVELOPER-SPECIFICS: you write clean, tested code."
RESEARCHER_SPECIFICS = "A0-RESEARCHER-SPECIFICS: you research with cited sources."
RESEARCHER_ADDITIONS = "A0-RESEARCHER-ADDITIONS: report sources as a numbered list."
ANALYST_SPECIFICS = "A0-ANALYST-SPECIFICS: you turn numbers into findings."
AGENT0_ROLE = "A0-AGENT0-ROLE: top level agent, your superior is the human user."

#: A tool as Agent Zero writes one: keyword arguments, `self.args`, `Response(message, break_loop)`.
WORD_COUNT_TOOL = """
from python.helpers.tool import Tool, Response


class WordCount(Tool):
    async def execute(self, **kwargs):
        text = kwargs.get("text") or self.args.get("text", "")
        words = len(str(text).split())
        return Response(message=f"The text has {words} words.", break_loop=False)
"""

#: A tool needing an Agent Zero helper that Cadre does not have.
BROWSE_TOOL = """
from python.helpers.tool import Tool, Response
from python.helpers.browser_use import BrowserSession


class BrowseWeb(Tool):
    async def execute(self, url="", **kwargs):
        return Response(message=await BrowserSession().open(url), break_loop=False)
"""

#: A working tool without its prompt file.
QUIET_TOOL = """
from python.helpers.tool import Tool, Response


class QuietTool(Tool):
    async def execute(self, **kwargs):
        return Response(message="quiet", break_loop=False)
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _agent_yaml(root: Path, title: str, description: str, context: str) -> None:
    _write(
        root / "agent.yaml",
        # JSON strings are YAML strings: a colon in the text needs no more care.
        f"title: {json.dumps(title)}\ndescription: {json.dumps(description)}\n"
        f"context: {json.dumps(context)}\n",
    )


def _agent_json(root: Path, meta: dict[str, object]) -> None:
    _write(root / "agent.json", json.dumps(meta, indent=2) + "\n")


def write_developer(usr: Path) -> Path:
    """`developer`: agent.yaml, its persona in specifics, and its own communication file
    that includes `agent.system.main.communication_additions.md` as Agent Zero's does."""
    root = usr / "agents" / "developer"
    _agent_yaml(root, "Developer", "Agent specialized in software development.",
                "Use for writing, debugging and refactoring code.")  # fmt: skip
    _write(root / "prompts" / "agent.system.main.specifics.md",
           f"## Your role\n{DEVELOPER_SPECIFICS}\n")  # fmt: skip
    _write(
        root / "prompts" / "agent.system.main.communication.md",
        """
        ## Communication
        Reply with one JSON object with "thoughts", "headline", "tool_name" and "tool_args".

        {{ include "agent.system.main.communication_additions.md" }}
        """,
    )
    return root


def write_researcher(usr: Path) -> Path:
    """`researcher`: agent.yaml, specifics and communication additions."""
    root = usr / "agents" / "researcher"
    _agent_yaml(root, "Researcher", "Agent specialized in research and analysis.",
                "Use for research: gathering, checking and summarising sources.")  # fmt: skip
    _write(root / "prompts" / "agent.system.main.specifics.md",
           f"## Deep research\n{RESEARCHER_SPECIFICS}\n")  # fmt: skip
    _write(root / "prompts" / "agent.system.main.communication_additions.md",
           f"## Receiving messages\n{RESEARCHER_ADDITIONS}\n")  # fmt: skip
    return root


def write_json_profile(usr: Path) -> Path:
    """`analyst`: an agent.json profile, as Agent Zero's settings UI saves one."""
    root = usr / "agents" / "analyst"
    _agent_json(root, {"title": "Analyst", "description": "Agent for data analysis.",
                       "context": "Use for analysing data sets.", "enabled": True})  # fmt: skip
    _write(root / "prompts" / "agent.system.main.specifics.md", f"{ANALYST_SPECIFICS}\n")
    return root


def write_agent0(usr: Path) -> Path:
    """A copy of Agent Zero's `agent0`: agent.json without `subordinate`, its role (with
    Agent Zero's `{{brand_name}}`), and a response tool prompt including a tips file
    that only Agent Zero has."""
    root = usr / "agents" / "agent0"
    _agent_json(root, {"title": "General",
                       "description": "Main agent of the system communicating with the user.",
                       "context": ""})  # fmt: skip
    _write(
        root / "prompts" / "agent.system.main.role.md",
        f"## Your role\n{{{{brand_name}}}} autonomous json ai agent\n{AGENT0_ROLE}\n",
    )
    _write(
        root / "prompts" / "agent.system.tool.response.md",
        """
        ### response:
        final answer to user, ends task processing; put the result in the text arg
        usage:
        ~~~json
        {"thoughts": ["..."], "headline": "Answering", "tool_name": "response",
         "tool_args": {"text": "Answer to the user"}}
        ~~~

        {{ include "agent.system.response_tool_tips.md" }}
        """,
    )
    return root


def write_toolsmith(usr: Path) -> Path:
    """`toolsmith`: a profile with Agent Zero tools: `word_count` (works), `browse_web`
    (imports an Agent Zero helper Cadre lacks) and `quiet_tool` (no prompt file)."""
    root = usr / "agents" / "toolsmith"
    _agent_yaml(root, "Toolsmith", "Agent with custom tools.", "Use for counting words.")
    _write(root / "tools" / "word_count.py", WORD_COUNT_TOOL)
    _write(
        root / "prompts" / "agent.system.tool.word_count.md",
        """
        ### word_count:
        count the words of a text
        usage:
        ~~~json
        {"thoughts": ["..."], "headline": "Counting", "tool_name": "word_count",
         "tool_args": {"text": "the text"}}
        ~~~
        """,
    )
    _write(root / "tools" / "browse_web.py", BROWSE_TOOL)
    _write(root / "prompts" / "agent.system.tool.browse_web.md",
           "### browse_web:\nopen a web page\n")  # fmt: skip
    _write(root / "tools" / "quiet_tool.py", QUIET_TOOL)
    return root


def write_all(usr: Path) -> dict[str, Path]:
    """Every profile above under `usr/agents/`, by name."""
    return {
        "developer": write_developer(usr),
        "researcher": write_researcher(usr),
        "analyst": write_json_profile(usr),
        "agent0": write_agent0(usr),
        "toolsmith": write_toolsmith(usr),
    }
