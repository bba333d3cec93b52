"""The browser: a streamed chunk until it shows in the page; switching to a big chat.

Runs a real run_ui.py against the fake model server and Debian's Chromium.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

from bench.harness import Row, provider_env
from bench.server import started
from core.chat_record import AgentRecord, ChatFile
from core.log import Log
from store import persist_chat
from tests.support.fake_llm import Reply, start_fake_llm

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip

# Records, for every marker "m123" the page shows, when it first appeared.
OBSERVER = """() => {
  window.__seen = {};
  const grab = () => {
    for (const el of document.querySelectorAll('[data-testid="response-body"]')) {
      for (const m of el.textContent.matchAll(/m(\\d{3})/g)) {
        if (!(m[1] in window.__seen)) window.__seen[m[1]] = Date.now();
      }
    }
  };
  new MutationObserver(grab).observe(document.body,
    {subtree: true, childList: true, characterData: true});
}"""


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def streaming_latency(page, llm, chunks: int) -> list[float]:
    head = (
        '{"thoughts": ["x"], "headline": "Streaming", "tool_name": "response", '
        '"tool_args": {"text": "'
    )
    pieces = [head] + [f"m{i:03d} " for i in range(chunks)] + ['"}}']
    sent: list[float] = []
    llm.script(Reply(pieces, delay=0.03, sent_at=sent))
    page.get_by_test_id("new-chat").click()
    page.get_by_test_id("message-input").wait_for()
    page.evaluate(OBSERVER)
    page.get_by_test_id("message-input").fill("stream")
    page.get_by_test_id("message-input").press("Enter")
    page.wait_for_function(f"() => Object.keys(window.__seen).length >= {chunks}", timeout=60_000)
    seen = page.evaluate("() => window.__seen")
    # sent[0] is the head chunk; marker i went out with chunk i + 1.
    return [seen[f"{i:03d}"] - sent[i + 1] * 1000 for i in range(chunks)]


def write_chats(count: int, big_items: int) -> tuple[str, str]:
    """`count` small chats and one with `big_items` log items; returns (big id, small id)."""
    for n in range(count):
        log = Log()
        items = big_items if n == 0 else 20
        for i in range(items):
            kind = ("user", "agent", "response", "tool")[i % 4]
            log.log(kind, f"step {i}", f"Item {i}: " + "text of a step, with some words. " * 4)
        persist_chat.write_chat(ChatFile(
            id=f"chat{n:03d}", name=f"Chat {n}", created_at=time.time() - n,
            agents=[AgentRecord(number=0, profile="agent0")],
            log={"guid": log.guid, "version": log.version, "items": log.to_list()},
        ))  # fmt: skip
    return "chat000", "chat001"


def switch_time(page, chat_id: str, last_no: int) -> float:
    page.evaluate("() => { window.__t0 = performance.now(); }")
    page.locator(f'[data-testid="chat-item"][data-chat-id="{chat_id}"]').click()
    page.wait_for_selector(f'[data-testid="log-item"][data-no="{last_no}"]', timeout=30_000)
    return page.evaluate("() => performance.now() - window.__t0")


def run(quick: bool) -> list[Row]:
    if not Path(CHROMIUM).exists():
        return [Row("browser benchmarks", 0, "-", note="skipped: no /usr/bin/chromium")]
    from playwright.sync_api import sync_playwright

    llm = start_fake_llm()
    usr = Path(os.environ["CADRE_USR_DIR"])
    big, small = write_chats(100, 2_000)
    env = {**os.environ, **provider_env(llm.base_url)}
    server, _ = started(env)
    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(server.url)
        page.locator('[data-testid="chat-item"]').first.wait_for()
        switches = []
        for _ in range(3 if quick else 6):
            switches.append(switch_time(page, big, 1_999))
            switch_time(page, small, 19)
        latencies = streaming_latency(page, llm, 50 if quick else 150)
    finally:
        browser.close()
        playwright.stop()
        server.stop()
        llm.stop()
    json.dumps(latencies)  # plain numbers only
    assert usr.exists()
    return [
        Row("streamed chunk → visible in the page, p50", statistics.median(latencies), "ms"),
        Row("streamed chunk → visible in the page, p95", percentile(latencies, 0.95), "ms", 50),
        Row(
            "switch to a chat of 2,000 items (100 chats), median",
            statistics.median(switches),
            "ms",
            300,
        ),  # fmt: skip
    ]
