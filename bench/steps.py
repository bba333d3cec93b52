"""The cost of a step, end to end: a message through the HTTP API until its answer.

A real `run_ui.py` process, the fake model server in this process at zero
latency. One message (`/api/v1/message`, `"wait": true`) makes Agent 0 run
`STEPS` cheap tool steps (the `echo` tool of a test profile), then answer:
`STEPS + 1` model calls. Time per step = (wall time of the call - the fake
server's own time handling those calls) / (`STEPS` + 1). What is left is the
framework, the model client and the plumbing around each step (saving,
pushing, the API's wait).

The model client's share is measured on its own (the same replies read by
the client, in this process) so the two can be added up, and the client
changed without this row telling a different story.

`python -m bench.steps --profile` runs the same message with the server in
this process and prints where the agents' loop spends its time (cProfile of
the loop's thread: the agents' work, saving's snapshot, the model client).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import statistics
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
def handler_clock() -> Iterator[list[float]]:
    """Seconds the fake server spent answering POSTs (its own time, not ours), appended."""
    from tests.support.fake_llm_http import _Handler

    spent: list[float] = []
    original = _Handler.do_POST

    def timed(self: _Handler) -> None:
        began = time.perf_counter()
        try:
            original(self)
        finally:
            spent.append(time.perf_counter() - began)

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


def one_message(url: str, llm: FakeLLMServer, spent: list[float], n: int) -> float:
    """Seconds per step of one message in a new chat, the fake server's time taken out."""
    script_message(llm, n)
    before = len(spent)
    began = time.perf_counter()
    answer_ = post(url, {"message": f"go {n}", "profile": PROFILE, "wait": True})
    wall = time.perf_counter() - began
    if answer_.get("response") != f"done {n}":
        raise RuntimeError(f"unexpected answer: {answer_}")
    # The chat's name is asked of the utility model after the run: not part of its wait.
    handled = sum(spent[before : before + STEPS + 1])
    return (wall - handled) / (STEPS + 1)


def client_share(llm: FakeLLMServer, repeat: int) -> float:
    """Median seconds the model client takes for one step's reply (same size, same server)."""
    from models.llm import ChatModel, ModelConfig

    model = ChatModel(ModelConfig("openai/m", api_base=llm.base_url, api_key="k"))
    messages = [{"role": "user", "content": "go"}]

    async def calls() -> list[float]:
        times = []
        for i in range(repeat + 2):  # two to warm up
            llm.script(Reply(reply("echo", text=f"step {i}")))
            began = time.perf_counter()
            await model.stream(messages)
            times.append(time.perf_counter() - began)
        return times[2:]

    return statistics.median(asyncio.run(calls()))


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
    server = ServerProcess(server_env(llm), log_file).start(timeout=60)
    try:
        with handler_clock() as spent:
            one_message(server.url, llm, spent, -1)  # warm: tools loaded, prompts parsed
            per_step = [one_message(server.url, llm, spent, n) for n in range(3 if quick else 8)]
        handler = statistics.median(spent) if spent else 0.0
        client = client_share(llm, 10 if quick else 40)
    finally:
        server.stop()
        llm.stop()
    step = statistics.median(per_step) * 1000
    return [
        Row(f"step through the HTTP API: a message of {STEPS} echo steps + answer, per step"
            " (fake server's time taken out), median", step, "ms", 15.0),
        Row("  of which the model client, one step's reply read alone (litellm today)",
            client * 1000, "ms"),
        Row("  the rest: framework and plumbing (saving, pushing, the API's wait)",
            step - client * 1000, "ms"),
        Row("  the fake server's own time per call (taken out above)", handler * 1000, "ms"),
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
    profiler = cProfile.Profile()
    with handler_clock() as spent:
        one_message(url, llm, spent, -1)
        runtime.call(profiler.enable)  # the loop's thread: where every agent runs
        began = time.perf_counter()
        steps = [one_message(url, llm, spent, n) for n in range(5)]
        wall = time.perf_counter() - began
        runtime.call(profiler.disable)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    print(out.getvalue())
    print(f"per step (profiled, so slower): {statistics.median(steps) * 1000:.1f} ms; "
          f"{5 * (STEPS + 1)} steps in {wall:.2f} s")  # fmt: skip
    server.pusher.stop()
    runtime.stop()
    llm.stop()
    del chats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", action="store_true", help="print the loop's profile")
    parser.add_argument("--top", type=int, default=40, help="lines of the profile")
    args = parser.parse_args()
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
