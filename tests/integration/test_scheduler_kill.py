"""A scheduled task whose run is cut short by a killed Cadre: a real run_ui.py, SIGKILL.

A real process, because what matters is what the kill leaves on disk (the task list
as the last write before the kill made it) and what the next start makes of it: the
run is recorded as interrupted, in plain words, and run again once at start.
"""

from __future__ import annotations

import functools
import json
import threading
from datetime import UTC, datetime, timedelta

from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import live_server
from tests.support.server_process import call_api

KEY = "kill-key"
call = functools.partial(call_api, key=KEY)


def test_a_run_cut_short_by_sigkill_is_recorded_interrupted_and_run_again(tmp_path, llm):
    server = live_server(tmp_path, llm.base_url, api_key=KEY)
    first, retry = threading.Event(), threading.Event()
    llm.add_rule(model_is("util-model"), Reply("Morning report"))
    llm.script(Reply(answer("never sent"), gate=first))
    try:
        soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
        task = call(server, "POST", "/api/v1/tasks", {
            "name": "Report", "prompt": "Write the morning report.", "kind": "planned",
            "at": [soon]})  # fmt: skip
        shown = lambda: call(server, "GET", f"/api/v1/tasks/{task['id']}")  # noqa: E731
        wait_for(lambda: llm.chat_requests("chat-model"), timeout=60, what="the run's model call")
        assert shown()["running"] is True
        server.kill()  # SIGKILL while the model answers: nothing of Cadre's runs after it

        left = json.loads((server.usr_dir / "scheduler" / "tasks.json").read_text())["tasks"][0]
        assert left["last_status"] == "" and left["next_run"] is None  # its one time is used

        llm.script(Reply(answer("The report."), gate=retry))
        server.start()
        after = shown()
        assert after["last_status"] == "interrupted"
        assert "Cadre stopped while it ran" in after["last_result"]
        assert "run again now" in after["last_result"]
        wait_for(lambda: shown()["running"], timeout=30, what="the run again")
        retry.set()
        wait_for(lambda: shown()["last_status"] == "success", timeout=60, what="its answer")
        wait_for(lambda: not shown()["running"], timeout=10, what="the run's end")
        done = shown()
        assert done["last_result"] == "The report." and done["running_since"] is None
        asked = [r.messages[-1]["content"] for r in llm.chat_requests("chat-model")]
        assert len(asked) == 2 and all("Write the morning report." in a for a in asked)
    finally:
        first.set()
        retry.set()
        server.stop()
