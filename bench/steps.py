"""The cost of a step, end to end: a message through the HTTP API until its answer.

A real `run_ui.py` process, the fake model server in this process at zero
latency. One message (`/api/v1/message`, `"wait": true`) makes Agent 0 run
`STEPS` cheap tool steps (the `echo` tool of a test profile), then answer:
`STEPS + 1` model calls. Time per step = (wall time of the call - the fake
server's own time handling those calls) / (`STEPS` + 1). What is left is the
framework, the model client and the plumbing around each step (saving,
pushing, the API's wait).

The model client's share is measured on its own (a step's call, with the
prompt the server really sent and a reply of the same size, in a process of
its own) so the two can be added up, and the client changed without this
row telling a different story. CPU time of the server process per step is
given too: on a shared machine it varies less than wall time.

`python -m bench.steps --profile` runs the same message with the server in
this process and prints where the agents' loop spends its time (cProfile of
the loop's thread: the agents' work, saving's snapshot, the model client); with
`CALLERS=<regex>` also who calls the functions it names (`CALLERS=posix.stat`).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.harness import Row, provider_env
from tests.support.agents import ECHO_TOOL, answer, backdate, make_profile, reply
from tests.support.fake_llm import FakeLLMServer, Reply, model_is, start_fake_llm
from tests.support.server_process import ServerProcess

API_KEY = "bench-key"
#: Tool steps per message; the answer makes one more model call.
STEPS = 20
#: The test profile whose `echo` tool is the cheap step.
PROFILE = "echoer"


@contextmanager
def handler_clock() -> Iterator[list[tuple[float, float]]]:
    """(start, seconds) of every POST the fake server answered: its own time, not ours."""
    from tests.support.fake_llm_http import _Handler

    spent: list[tuple[float, float]] = []
    original = _Handler.do_POST

    def timed(self: _Handler) -> None:
        began = time.perf_counter()
        try:
            original(self)
        finally:
            spent.append((began, time.perf_counter() - began))

    _Handler.do_POST = timed  # type: ignore[method-assign]
    try:
        yield spent
    finally:
        _Handler.do_POST = original  # type: ignore[method-assign]


def script_message(llm: FakeLLMServer, n: int) -> None:
    """`STEPS` echo calls, then the answer (streamed as a model streams: small chunks)."""
    llm.script(*(Reply(reply("echo", text=f"step {n}.{i}")) for i in range(STEPS)))
    llm.script(Reply(answer(f"done {n}")))


def post(url: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        url + "/api/v1/message", data=json.dumps(body).encode(), method="POST",
        headers={"X-API-Key": API_KEY, "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=300) as response:
        result: dict[str, object] = json.loads(response.read())
    return result


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_message(
    url: str,
    llm: FakeLLMServer,
    spent: list[tuple[float, float]],
    n: int,
    pids: list[int] | None = None,
) -> tuple[float, float]:
    """Seconds per step of one message in a new chat, the fake server's time taken out,
    and the server's CPU seconds per step (when its processes' `pids` are given: under
    gunicorn, the arbiter and its worker)."""
    script_message(llm, n)
    cpu = sum(map(cpu_seconds, pids or []))
    began = time.perf_counter()
    answer_ = post(url, {"message": f"go {n}", "profile": PROFILE, "wait": True})
    ended = time.perf_counter()
    cpu = sum(map(cpu_seconds, pids or [])) - cpu
    if answer_.get("response") != f"done {n}":
        raise RuntimeError(f"unexpected answer: {answer_}")
    # Every call the server answered meanwhile: the steps', the recall's embeddings, a
    # previous chat's naming (which also ran on the server's loop at the time).
    handled = sum(seconds for start, seconds in spent if began <= start < ended)
    return (ended - began - handled) / (STEPS + 1), cpu / (STEPS + 1)


def client_share(base_url: str, repeat: int, prompt: Path) -> tuple[float, float]:
    """Median seconds the model client takes for one step's call (the same prompt, a reply
    of the same size, the same server), and its CPU seconds per call.

    Run in a process of its own (see `main`), as the server's client is: in this
    one it would share the interpreter with the fake server it reads from.
    """
    from models.llm import ModelConfig
    from models.model import for_config

    # Through the seam, as the server's calls go: the client `model_client` picks.
    model = for_config(ModelConfig("openai/m", api_base=base_url, api_key="k"))
    messages = json.loads(prompt.read_text())

    async def calls() -> tuple[list[float], float]:
        times = []
        for _ in range(2):  # to warm up
            await model.stream(messages)
        cpu = time.process_time()
        for _ in range(repeat):
            began = time.perf_counter()
            await model.stream(messages)
            times.append(time.perf_counter() - began)
        # litellm's bookkeeping after a call runs in tasks of its own: let it finish.
        await asyncio.sleep(0.2)
        return times, time.process_time() - cpu

    times, cpu = asyncio.run(calls())
    return statistics.median(times), cpu / repeat


def client_share_apart(llm: FakeLLMServer, repeat: int) -> tuple[float, float]:
    """`client_share` measured by another process against `llm` (seconds), with the
    prompt of a step the server sent last (its middle step: history half grown)."""
    steps = [r for r in llm.chat_requests() if r.body.get("model") == "m"][-(STEPS + 1) :]
    prompt = Path(tempfile.mkstemp(prefix="cadre-bench-prompt-", suffix=".json")[1])
    prompt.write_text(json.dumps(steps[STEPS // 2].body["messages"]))
    llm.script(*(Reply(reply("echo", text=f"step x.{i}")) for i in range(repeat + 2)))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    command = [sys.executable, "-m", "bench.steps", "--client-share", llm.base_url, str(repeat)]
    try:
        done = subprocess.run(
            [*command, str(prompt)], capture_output=True, text=True,
            cwd=Path(__file__).parent.parent, env=env,
        )  # fmt: skip
    finally:
        prompt.unlink()
    if done.returncode != 0:
        raise RuntimeError(f"measuring the client alone failed:\n{done.stderr[-2000:]}")
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def prepare(usr: Path) -> FakeLLMServer:
    backdate(make_profile(usr, PROFILE, tools={"echo": ECHO_TOOL}))
    llm = start_fake_llm()
    llm.add_rule(model_is("u"), Reply("Bench chat"))  # chat naming, memorizing
    return llm


def server_env(llm: FakeLLMServer) -> dict[str, str]:
    return {**os.environ, **provider_env(llm.base_url), "CADRE_API_KEY": API_KEY}


def run(quick: bool) -> list[Row]:
    usr = Path(os.environ["CADRE_USR_DIR"])
    llm = prepare(usr)
    log_file = Path(tempfile.mkstemp(prefix="cadre-bench-steps-", suffix=".log")[1])
    # Measured once start-up's imports are done: litellm's, seconds long, shares the
    # interpreter with every step meanwhile (several times their cost).
    server = ServerProcess(server_env(llm), log_file).start(timeout=60, ready=True)
    try:
        pids = server.pids()
        with handler_clock() as spent:
            one_message(server.url, llm, spent, -1)  # warm: tools loaded, prompts parsed
            measured = [one_message(server.url, llm, spent, n, pids)
                        for n in range(3 if quick else 8)]  # fmt: skip
            client_calls = len(spent)
            client, client_cpu = client_share_apart(llm, 10 if quick else 40)
            # The fake server's time is taken out of the client's calls too.
            handler = statistics.median(seconds for _, seconds in spent[client_calls:])
        client -= handler
    finally:
        server.stop()
        llm.stop()
    step = statistics.median(wall for wall, _ in measured) * 1000
    cpu = statistics.median(cpu for _, cpu in measured) * 1000
    return [
        Row(f"step through the HTTP API: a message of {STEPS} echo steps + answer, per step"
            " (fake server's time taken out), median", step, "ms", 15.0),
        Row("  of which the model client: one step's call alone (same prompt and reply), in a"
            " process of its own (the client `auto` picks: the lean one)", client * 1000, "ms"),
        Row("  the rest: framework and plumbing (saving, pushing, the API's wait)",
            step - client * 1000, "ms"),
        Row("  the fake server's own time per call (taken out above)", handler * 1000, "ms"),
        # CPU time hardly depends on what else the machine runs: the figures to compare.
        Row("step: CPU time of the server per step (its processes, every thread)", cpu, "ms"),
        Row("  of which the model client's CPU per call, read alone", client_cpu * 1000, "ms"),
        Row("  the rest: framework and plumbing", cpu - client_cpu * 1000, "ms"),
    ]  # fmt: skip


def profile(top: int) -> None:
    """One message with the server in this process; print the agents' loop's profile."""
    from helpers.runtime import AgentRuntime
    from run_ui import start
    from tests.support.server_process import free_port

    scratch = Path(tempfile.mkdtemp(prefix="cadre-bench-steps-"))
    os.environ["CADRE_USR_DIR"] = str(scratch / "usr")
    llm = prepare(scratch / "usr")
    os.environ.update(server_env(llm))
    runtime = AgentRuntime().start()
    port = free_port()
    chats, server = start(runtime, "127.0.0.1", port)
    threading.Thread(
        target=server.socketio.run, args=(server.app,), daemon=True,
        kwargs={"host": "127.0.0.1", "port": port, "allow_unsafe_werkzeug": True,
                "use_reloader": False, "log_output": False},
    ).start()  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(url + "/health", timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    with handler_clock() as spent:
        one_message(url, llm, spent, -1)
        before = thread_cpu()
        for n in range(3):
            one_message(url, llm, spent, n)
        print_thread_cpu(before, thread_cpu(), 3 * (STEPS + 1))
        profiler = cProfile.Profile()
        runtime.call(profiler.enable)  # the loop's thread: where every agent runs
        began = time.perf_counter()
        steps = [one_message(url, llm, spent, n)[0] for n in range(5)]
        wall = time.perf_counter() - began
        runtime.call(profiler.disable)
    stats = pstats.Stats(profiler, stream=io.StringIO())
    print_by_package(stats, 5 * (STEPS + 1))
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)
    if os.environ.get("CALLERS"):
        stats.print_callers(os.environ["CALLERS"])
    print(out.getvalue())
    print(f"per step (profiled, so slower): {statistics.median(steps) * 1000:.1f} ms; "
          f"{5 * (STEPS + 1)} steps in {wall:.2f} s")  # fmt: skip
    server.pusher.stop()
    runtime.stop()
    llm.stop()
    del chats


def thread_cpu() -> dict[str, float]:
    """CPU seconds each live thread of this process has used, by the thread's name."""
    names = {t.native_id: re.sub(r"\d+", "N", t.name) for t in threading.enumerate()}
    used: dict[str, float] = {}
    for tid, name in names.items():
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        key = f"{name} ({tid})" if name.startswith("cadre-agents") else name
        used[key] = used.get(key, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf(
            "SC_CLK_TCK"
        )
    return used


def print_thread_cpu(before: dict[str, float], after: dict[str, float], steps: int) -> None:
    # Threads that ended meanwhile are missed; request threads are the fake server's
    # (each model call) and the API's (one per message).
    print("CPU per step by thread (the fake server runs in this process too):")
    for name, seconds in sorted(after.items(), key=lambda kv: before.get(kv[0], 0) - kv[1]):
        print(f"  {name:45} {(seconds - before.get(name, 0.0)) * 1000 / steps:7.2f} ms")


def print_by_package(stats: pstats.Stats, steps: int) -> None:
    """The loop's own time (tottime) per step, summed by the package the code belongs to."""
    root = str(Path(__file__).resolve().parent.parent)
    spent: dict[str, float] = {}
    for (file, _, name), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        if "select.epoll" in name:
            group = "idle (the loop waiting for sockets, threads)"
        elif "site-packages" in file:
            group = file.split("site-packages/", 1)[1].split("/", 1)[0]
        elif file.startswith(root):
            group = "cadre: " + file[len(root) + 1 :].split("/", 1)[0]
        elif file == "~":
            group = "built-ins (C functions)"
        else:
            group = "python: " + Path(file).stem
        spent[group] = spent.get(group, 0.0) + tottime
    print("The agents' loop, own time per step by package (profiled, so inflated):")
    for group, seconds in sorted(spent.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {group:45} {seconds * 1000 / steps:7.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", action="store_true", help="print the loop's profile")
    parser.add_argument("--top", type=int, default=40, help="lines of the profile")
    parser.add_argument(
        "--client-share",
        nargs=3,
        metavar=("BASE_URL", "REPEAT", "PROMPT"),
        help="(used by `run`) time the model client against BASE_URL with PROMPT (a JSON file)",
    )
    args = parser.parse_args()
    if args.client_share:
        url, repeat, prompt = args.client_share
        print(*client_share(url, int(repeat), Path(prompt)))
        return 0
    if args.profile:
        profile(args.top)
        return 0
    with tempfile.TemporaryDirectory(prefix="cadre-bench-") as scratch:
        os.environ["CADRE_USR_DIR"] = str(Path(scratch) / "usr")
        from bench.harness import table

        print(table(run(quick=False)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
