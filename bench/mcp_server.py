"""The MCP server's cost over the native API: a one-step answer through each.

A real `run_ui.py` with the fake model server: Agent 0 answers at once, so
what is measured is the way in and out. `/api/v1/message` (one HTTP request)
against the MCP tool `send_message` through the official SDK's client, in
both protocol eras (the 2025 handshake and 2026-07-28), over one connection
each.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from pathlib import Path

from bench.harness import Row, provider_env
from bench.server import API_KEY, started
from tests.support.agents import answer
from tests.support.fake_llm import FakeLLMServer, Reply, model_is, start_fake_llm
from tests.support.server_process import ServerProcess, call_api


def api_times(server: ServerProcess, llm: FakeLLMServer, count: int) -> list[float]:
    times = []
    for _ in range(count):
        llm.script(Reply(answer("ok")))
        began = time.perf_counter()
        call_api(server, "POST", "/api/v1/message", {"message": "hi"}, key=API_KEY)
        times.append(time.perf_counter() - began)
    return times


async def mcp_times(
    server: ServerProcess, llm: FakeLLMServer, count: int, mode: str
) -> list[float]:
    # The SDK's client, imported here: only this benchmark needs it.
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    times = []
    http = create_mcp_http_client(headers={"X-API-Key": API_KEY})
    transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
    async with http, Client(transport, mode=mode) as client:
        for _ in range(count + 1):  # the first one warms the connection up
            llm.script(Reply(answer("ok")))
            began = time.perf_counter()
            called = await client.call_tool("send_message", {"message": "hi"})
            times.append(time.perf_counter() - began)
            if called.is_error:
                raise RuntimeError(f"send_message failed: {called.content}")
    return times[1:]


def run(quick: bool) -> list[Row]:
    llm = start_fake_llm()
    llm.add_rule(model_is("u"), Reply("A chat"))  # naming each new chat (provider_env's "u")
    env = {**os.environ, **provider_env(llm.base_url), "CADRE_API_KEY": API_KEY}
    count = 8 if quick else 25
    try:
        server, _ = started(env)
        try:
            api_times(server, llm, 2)  # the first calls wait for litellm's import
            api = statistics.median(api_times(server, llm, count))
            legacy = statistics.median(asyncio.run(mcp_times(server, llm, count, "legacy")))
            modern = statistics.median(asyncio.run(mcp_times(server, llm, count, "auto")))
        finally:
            server.stop()
    finally:
        llm.stop()
    assert Path(os.environ["CADRE_USR_DIR"]).exists()
    return [
        Row("MCP: one-step answer through /api/v1/message (native), median", api * 1000, "ms"),
        Row("MCP: send_message over the native API, 2025 handshake, median",
            (legacy - api) * 1000, "ms", 30),
        Row("MCP: send_message over the native API, 2026-07-28, median",
            (modern - api) * 1000, "ms", 30),
    ]  # fmt: skip
