"""Schema-constrained replies: fifty fixed prompts through the embedded local model, held
to the reply schema and not, and the share of replies Cadre can run.

A reply counts when it parses, names a tool the agent has (with a valid
method), and its arguments validate against that tool's own model.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time

from bench.harness import Row
from bench.model_file import use_builtin_model

PROMPTS = [
    "What is the capital of France?", "List the files in the work folder.",
    "Compute 17 * 23 with Python.", "Write a haiku about rain.", "Wait ten seconds.",
    "Tell me when the build is done.", "Read the file notes.txt.", "Create hello.py printing hi.",
    "What is 2 + 2?", "Summarise the theory of relativity in one line.",
    "Install the requests package.", "Show the current date.", "Who wrote Hamlet?",
    "Translate 'good morning' to Spanish.", "Count the lines of README.md.",
    "Ask a researcher to find the tallest mountain.", "Run 'uname -a' in the terminal.",
    "Delete the temporary files in /tmp/work.", "Give me three names for a cat.",
    "Convert 100 Fahrenheit to Celsius.", "What time is it in Tokyo?",
    "Fix the typo in line 3 of app.py.", "Start a Python session and import math.",
    "Notify me that the task started.", "Explain recursion to a child.",
    "Check which Python version is installed.", "Write a shell loop printing 1 to 5.",
    "Say hello.", "Make a folder called data.", "What is the square root of 144?",
    "Find the largest file in the work folder.", "Describe a sunset in one sentence.",
    "Reset the terminal session.", "Print the environment variable HOME.",
    "Name the planets of the solar system.", "Reverse the string 'cadre' in Python.",
    "Plan a three-step approach to learn Go.", "Is 97 a prime number?",
    "Write 'done' into status.txt.", "Show the first 5 lines of data.csv.",
    "Ask a developer to write a sorting function.", "What does HTTP stand for?",
    "Sleep for one minute.", "Tell the user the tests passed.", "List three sorting algorithms.",
    "Run 'ls -la' and report.", "Give a synonym for happy.", "What is the boiling point of water?",
    "Answer: yes or no, is the sky blue?", "Finish: the quick brown fox...",
]  # fmt: skip


def runnable(text: str, tools: dict) -> bool:
    from core.reply.extract_tools import parse_reply

    try:
        reply = parse_reply(text)
        name, method = reply.tool_name.split(":")[0], reply.tool_method
        tool = tools.get(name)
        if tool is None or (tool.methods and method not in tool.methods):
            return False
        tool.Args.model_validate(reply.tool_args or {})
        return True
    except Exception:  # noqa: BLE001 - anything Cadre could not run
        return False


def run(quick: bool) -> list[Row]:
    from core.chat import Chat
    from core.prompt.system_prompt import build_system_prompt
    from core.reply.reply_schema import reply_schema, tool_classes
    from helpers.errors import ProviderError
    from initialize import agent_config
    from models.model import for_config

    use_builtin_model()
    for name in ("CHAT_MODEL", "UTIL_MODEL", "CHAT_API_BASE", "CHAT_API_KEY"):
        os.environ.pop(f"CADRE_{name}", None)  # the default: the built-in model
    prompts = PROMPTS[:4] if quick else PROMPTS  # a reply takes seconds on a CPU
    context = Chat(agent_config())
    system = asyncio.run(build_system_prompt(context.agent0))
    tools = tool_classes("agent0")
    schema = reply_schema(tools)
    config = context.agent0.config.chat_model
    # Held to the schema, a reply gets the app's own cap (models.local_model.REPLY_DEFAULTS):
    # a lower one cut replies the schema would have ended. Free replies ramble to any
    # cap (minutes each on this CPU), and prose is not runnable at any length: 300.
    free = dataclasses.replace(config, kwargs={**config.kwargs, "max_tokens": 300})

    async def ask(prompt: str, constrained: bool) -> str:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        try:
            model = for_config(config if constrained else free)
            reply = await model.complete(messages, schema=schema if constrained else None)
        except ProviderError:  # e.g. litellm stops a model that repeats itself: not runnable
            return ""
        return reply.text

    rows = []
    for constrained in (False, True):
        began = time.perf_counter()
        good = sum(runnable(asyncio.run(ask(p, constrained)), tools) for p in prompts)
        seconds = (time.perf_counter() - began) / len(prompts)
        label = "with the schema" if constrained else "without it"
        rows.append(Row(f"local model, {len(prompts)} prompts: runnable replies {label}",
                        100 * good / len(prompts), "%", 100.0 if constrained else None,
                        higher_is_better=True))  # fmt: skip
        rows.append(Row(f"local model: seconds per reply {label}", seconds, "s"))
    return rows
