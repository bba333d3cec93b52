"""The OpenAI-compatible endpoint's overhead over the native API, for a one-step answer.

One real `run_ui.py` on the fake model server. Each round asks the same
one-step question (Agent 0 answers at once) through the native
`POST /api/v1/message` and through `POST /v1/chat/completions`, plain and
streamed (until `data: [DONE]`), each on a new chat, in turn so that the
machine's load falls on all three alike. Figures are medians over the rounds;
the overhead is the endpoint's median minus the native one.
"""

from __future__ import annotations

import json
import os
import statistics
import time
import urllib.request
from collections.abc import Callable

from bench.harness import Row, provider_env
from bench.server import API_KEY, started
from tests.support.agents import answer
from tests.support.fake_llm import Reply, model_is, start_fake_llm
from tests.support.server_process import ServerProcess

QUESTION = "What is the capital of France?"


def post(server: ServerProcess, path: str, body: dict[str, object]) -> bytes:
    request = urllib.request.Request(
        server.url + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {API_KEY}", "X-API-Key": API_KEY,
                 "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.read()


def native(server: ServerProcess) -> None:
    answered = json.loads(post(server, "/api/v1/message", {"message": QUESTION}))
    assert answered["response"] == "Paris."


def completion(server: ServerProcess) -> None:
    body = {"model": "cadre", "messages": [{"role": "user", "content": QUESTION}]}
    answered = json.loads(post(server, "/v1/chat/completions", body))
    assert answered["choices"][0]["message"]["content"] == "Paris."


def streamed(server: ServerProcess) -> None:
    body = {"model": "cadre", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
    events = post(server, "/v1/chat/completions", body).decode()
    assert '"content": "Paris."' in events and events.endswith("data: [DONE]\n\n")


def run(quick: bool) -> list[Row]:
    llm = start_fake_llm()
    llm.add_rule(model_is("u"), Reply("Bench chat"))  # chat naming
    llm.add_rule(model_is("m"), Reply(answer("Paris.")))  # every step: the answer
    env = {**os.environ, **provider_env(llm.base_url), "CADRE_API_KEY": API_KEY}
    server, _ = started(env)
    ways: dict[str, Callable[[ServerProcess], None]] = {
        "native": native, "completion": completion, "streamed": streamed,
    }  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for way in ways.values():  # warm up: litellm's import, the first chats
            way(server)
        for _ in range(10 if quick else 40):
            for name, way in ways.items():
                began = time.perf_counter()
                way(server)
                samples[name].append(time.perf_counter() - began)
    finally:
        server.stop()
        llm.stop()
    ms = {name: statistics.median(times) * 1000 for name, times in samples.items()}
    return [
        Row("native API: one-step answer (`/api/v1/message`), median", ms["native"], "ms"),
        Row("OpenAI endpoint: one-step completion, median", ms["completion"], "ms"),
        Row(
            "OpenAI endpoint overhead over the native API (completion)",
            ms["completion"] - ms["native"],
            "ms",
            20,
        ),  # fmt: skip
        Row(
            "OpenAI endpoint overhead over the native API (streamed to [DONE])",
            ms["streamed"] - ms["native"],
            "ms",
            20,
        ),  # fmt: skip
    ]
