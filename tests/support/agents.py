"""Helpers for tests that drive agents: replies, test profiles, waiting."""

from __future__ import annotations

import json
import os
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: A tool that returns its `text` argument: a tool result of any size, on demand.
ECHO_TOOL = """
from core.tool import Response, Tool, ToolArgs

class EchoArgs(ToolArgs):
    text: str

class Echo(Tool):
    Args = EchoArgs

    async def execute(self, args):
        return Response(message=args.text)
"""


def reply(tool: str, headline: str = "", thoughts: list[str] | None = None, **args: Any) -> str:
    """A well-formed agent reply calling `tool` with `args`."""
    return json.dumps(
        {
            "thoughts": thoughts or [f"I will use {tool}."],
            "headline": headline or f"Using {tool}",
            "tool_name": tool,
            "tool_args": args,
        }
    )


def answer(text: str) -> str:
    """A reply that ends the loop with `text`."""
    return reply("response", headline="Answering", text=text)


def cut_before(text: str, *marks: str) -> list[str]:
    """`text` in pieces, each of `marks` (in order) starting a new one: what a stream held
    at those points sends between them (`Reply.holds`)."""
    pieces, start = [], 0
    for mark in marks:
        at = text.index(mark, start)
        pieces.append(text[start:at])
        start = at
    return [*pieces, text[start:]]


def make_profile(
    usr: Path,
    name: str,
    *,
    tools: dict[str, str] | None = None,
    prompts: dict[str, str] | None = None,
    yaml: str = "",
) -> Path:
    """A profile folder under `usr/agents/` with the given tool sources and prompt files."""
    root = usr / "agents" / name
    (root / "tools").mkdir(parents=True, exist_ok=True)
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    (root / "agent.yaml").write_text(yaml or f"title: {name}\ndescription: test profile\n")
    for tool, source in (tools or {}).items():
        (root / "tools" / f"{tool}.py").write_text(textwrap.dedent(source))
        (root / "prompts" / f"agent.system.tool.{tool}.md").write_text(f"### {tool}\nA test tool.")
    for file, text in (prompts or {}).items():
        (root / "prompts" / file).write_text(text)
    return root


def project_settings(usr: Path, name: str, settings: dict[str, Any]) -> None:
    """Write project `name`'s settings.json under the test's `usr/`."""
    folder = usr / "projects" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(settings))


def backdate(root: Path, seconds: float = 60) -> Path:
    """Everything under `root` as if written `seconds` ago, as an installed profile is.

    Files changed in the last two seconds are read again on every step (the racy
    rule of helpers.file_snapshot), so a profile made just now is never reused.
    """
    then = time.time() - seconds
    for folder, _, files in os.walk(root):
        for name in (*files, "."):
            os.utime(Path(folder) / name, (then, then))
    return root


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Poll `predicate` until it is truthy; fail with `what` after `timeout` seconds.

    Often at first, then every 50 ms: a predicate asking a server over HTTP cost it about
    1.3 ms of CPU a poll, some 10% of a core taken from the other test processes while a
    test waited with a poll every 10 ms."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(pause)
        pause = min(pause * 1.5, 0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def history_text(agent: Any) -> str:
    """Everything in an agent's history as one string."""
    return "\n".join(m.content for m in agent.history.output())


def log_types(context: Any) -> list[str]:
    return [item.type for item in context.log.items]
