"""A newcomer's first tasks on the built-in model, through Cadre's real loop.

`python -m bench embedded` (the model file must be there: `python3 cadre.py
start` downloads it; or name any GGUF with CADRE_LOCAL_MODEL_PATH). Each task
runs in a new chat of a real chat store (naming, saving, memory, the work
folder), with no provider configured, and counts as a success when its answer
is sensible by a fixed check. Besides success and seconds per task it measures
the model's load time and memory, the size of Agent 0's system prompt in
small-model mode and in full, and the prompt time of a first and a second call
with the same system prompt (llama.cpp's prompt cache).

`--quick` runs each task once, otherwise `REPEAT` times. Last, the evaluation suite the
built-in model is measured on (evals/suites/builtin.yaml) runs through the evaluation
runner, as `python3 cadre.py eval builtin --profile default` would: its pass rate is a row.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.harness import Row
from bench.model_file import use_builtin_model

#: Runs of each task (the machine's load makes single runs noisy).
REPEAT = 2
#: The target: each task answered within this many seconds on a 2-core machine.
TARGET = 60.0
#: A task still running after this is stopped and counts as failed (BENCH_LIMIT: another).
LIMIT = float(os.environ.get("BENCH_LIMIT", "150"))


@dataclass(frozen=True)
class Task:
    name: str
    message: str
    #: Sensible? Given the answer and the chat, True when it is.
    check: Callable[[str, object], bool]


def _has_item(context: object, kind: str, text: str = "") -> bool:
    return any(i.type == kind and text in (i.heading + str(i.kvps)) for i in context.log.items)


def _saved(word: str) -> Callable[[str, object], bool]:
    def check(answer: str, context: object) -> bool:
        from memory import memories

        store = memories.open_area(context.agent0.config.settings)
        return any(word in m.text.lower() for m in store.all())

    return check


TASKS = [
    Task("greeting", "hello",
         lambda a, c: any(w in a.lower() for w in ("hello", "hi", "hey", "help", "welcome"))),
    Task("sum", "what is 17*23?", lambda a, c: "391" in a),
    Task("fact", "What is the capital of France?", lambda a, c: "paris" in a.lower()),
    Task("say only OK", "Say only OK", lambda a, c: a.strip().strip(".!`*\"' ").upper() == "OK"),
    Task("say only the word", "Say only the word OK.",
         lambda a, c: a.strip().strip(".!`*\"' ").upper() == "OK"),
    Task("who are you", "Who are you?",
         lambda a, c: any(w in a.lower() for w in ("agent", "assistant", "cadre"))),
    Task("translate", "Translate 'thank you' into French.", lambda a, c: "merci" in a.lower()),
    Task("number only", "What is 12 + 30? Answer with the number only.",
         lambda a, c: a.strip().strip(".!`*\"' ") == "42"),
    Task("run code", "Write a Python function that returns the square of a number and run it "
         "with 12.", lambda a, c: "144" in a and _has_item(c, "code_exe")),
    Task("list folder", "List the files in the work folder.",
         lambda a, c: "notes.txt" in a and "budget.csv" in a),
    Task("remember", "Remember that my favourite colour is teal.",
         lambda a, c: _saved("teal")(a, c)),
    Task("recall (new chat)", "What is my favourite colour?", lambda a, c: "teal" in a.lower()),
    Task("delegate", "Ask a researcher subordinate what HTTP status 418 means.",
         lambda a, c: "teapot" in a.lower() and _has_item(c, "subagent")),
]  # fmt: skip


@dataclass
class Outcome:
    task: str
    ok: bool
    seconds: float
    answer: str


def _run_task(chats: object, task: Task) -> Outcome:
    from core.agent_types import UserMessage

    context = chats.new_chat()
    began = time.perf_counter()
    try:
        answer = context.communicate(UserMessage(task.message)).result(LIMIT)
    except TimeoutError:
        context.stop()
        answer = f"(stopped after {LIMIT:.0f} s)"
    except Exception as exc:  # noqa: BLE001 - a failed run is a failed task, reported
        answer = f"({type(exc).__name__}: {exc})"
    seconds = time.perf_counter() - began
    try:
        ok = task.check(answer, context) and seconds <= LIMIT
    except Exception:  # noqa: BLE001 - a check that cannot look counts as a failure
        ok = False
    one_line = " ".join(answer.split())[:160]
    print(f"  {task.name}: {'ok ' if ok else 'BAD'} {seconds:5.1f} s  {one_line}",
          file=sys.stderr, flush=True)  # fmt: skip
    if not ok or seconds > TARGET:  # what the agents did, to see why
        for item in context.log.items:
            said = " ".join(f"{item.content} {item.kvps}".split())[:200]
            print(f"      {item.type}: {item.heading}: {said}", file=sys.stderr, flush=True)
    return Outcome(task.name, ok, seconds, answer)


async def _prompt_seconds(base_url: str, system: str, user: str) -> tuple[float, int]:
    """Seconds llama.cpp took to read the prompt of one call, and its prompt tokens."""
    import httpx

    body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "max_tokens": 1, "cache_prompt": True}  # fmt: skip
    async with httpx.AsyncClient(timeout=600) as client:
        reply = (await client.post(f"{base_url}/v1/chat/completions", json=body)).json()
    timings = reply.get("timings", {})
    return timings.get("prompt_ms", 0.0) / 1000, int(timings.get("prompt_n", 0))


async def _token_count(base_url: str, text: str) -> int:
    import httpx

    async with httpx.AsyncClient(timeout=60) as client:
        reply = (await client.post(f"{base_url}/tokenize", json={"content": text})).json()
    return len(reply.get("tokens", []))


def _prompt_rows(runtime: object) -> list[Row]:
    """Agent 0's system prompt: tokens small and full, and the cache's effect on its reading."""
    from core.chat import Chat
    from core.prompt.system_prompt import build_system_prompt
    from initialize import agent_config
    from models.local_model import LOCAL

    small = Chat(agent_config())
    full = Chat(agent_config({"chat_model": "openai/any", "chat_ctx_length": 128_000}))
    texts = [runtime.submit(build_system_prompt(c.agent0)).result(60) for c in (small, full)]
    endpoint = runtime.submit(LOCAL.endpoint(small.agent0.config.chat_model.local)).result(600)
    base = endpoint.removesuffix("/v1")
    tokens = [runtime.submit(_token_count(base, t)).result(60) for t in texts]
    first, read = runtime.submit(_prompt_seconds(base, texts[0], "What is 2+2?")).result(600)
    second, again = runtime.submit(_prompt_seconds(base, texts[0], "Name a colour.")).result(600)
    return [
        Row("embedded: A0 system prompt tokens, small-model mode", tokens[0], "tokens"),
        Row("embedded: A0 system prompt tokens, full", tokens[1], "tokens"),
        Row(f"embedded: prompt time, first call ({read} tokens read)", first, "s"),
        Row(f"embedded: prompt time, second call ({again} tokens read)", second, "s"),
    ]


def _eval_rows(chats: object, repeat: int) -> list[Row]:
    """The built-in model's figure on its evaluation suite (evals/suites/builtin.yaml)."""
    from evals.places import SHIPPED
    from evals.runner import Plan, run_suite
    from evals.suite import load_suite

    suite = load_suite(SHIPPED / "builtin.yaml")
    plan = Plan(suite=suite, profile="default", repeat=repeat, parallel=1, timeout=LIMIT)
    result = run_suite(chats, plan, lambda run, done, total: print(
        f"  eval {run.task}: {'ok ' if run.passed else 'BAD'} {run.seconds:5.1f} s",
        file=sys.stderr, flush=True))  # fmt: skip
    return [Row(f"embedded: eval suite builtin: passed ({result.passed} of {result.total})",
                100 * result.passed / result.total, "%", 100.0, higher_is_better=True)]  # fmt: skip


def _prepare(usr: Path) -> None:
    work = usr / "workdir"
    work.mkdir(parents=True, exist_ok=True)
    (work / "notes.txt").write_text("Buy milk.\n")
    (work / "budget.csv").write_text("month,amount\nJanuary,120\n")


def run(quick: bool) -> list[Row]:
    from helpers.files import usr_dir
    from helpers.runtime import AgentRuntime
    from initialize import ChatFactory, agent_config
    from models.local_model import LOCAL
    from store.chats import ChatManager

    model = use_builtin_model()
    for name in ("CHAT_MODEL", "UTIL_MODEL", "CHAT_API_BASE", "CHAT_API_KEY"):
        os.environ.pop(f"CADRE_{name}", None)  # no provider: the built-in model
    _prepare(usr_dir())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    began = time.perf_counter()
    LOCAL.load(agent_config().chat_model.local)
    runtime = AgentRuntime().start()
    try:
        runtime.submit(LOCAL.endpoint(agent_config().chat_model.local)).result(900)
        loaded = time.perf_counter() - began
        rows = _prompt_rows(runtime)
        chats = ChatManager(runtime, ChatFactory(runtime))
        outcomes: list[Outcome] = []
        for round_no in range(1 if quick else REPEAT):
            print(f"round {round_no + 1}:", file=sys.stderr, flush=True)
            for task in TASKS:
                if task.name in os.environ.get("BENCH_TASKS", task.name).split(","):
                    outcomes.append(_run_task(chats, task))
        evaluated = _eval_rows(chats, 1 if quick else REPEAT)
    finally:
        runtime.stop()
    memory_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    rows += [
        Row(f"embedded: model {model.name} loaded", loaded, "s"),
        Row("embedded: memory taken (peak RSS growth)", memory_mb, "MB"),
    ]
    for task in TASKS:
        mine = [o for o in outcomes if o.task == task.name]
        if not mine:
            continue
        good = sum(o.ok for o in mine)
        seconds = [o.seconds for o in mine]
        rows.append(Row(f"embedded: {task.name}: success ({good} of {len(mine)})",
                        100 * good / len(mine), "%", 100.0, higher_is_better=True))  # fmt: skip
        rows.append(Row(f"embedded: {task.name}: seconds (median; max {max(seconds):.0f})",
                        statistics.median(seconds), "s", TARGET))  # fmt: skip
    good = sum(o.ok for o in outcomes)
    rows.append(Row(f"embedded: all tasks: success ({good} of {len(outcomes)})",
                    100 * good / len(outcomes), "%", 100.0, higher_is_better=True))  # fmt: skip
    return rows + evaluated
