"""The server the modules of accounts share (tests/support/shared_accounts.py) is left by
each module as it found it: the next module sees none of the users, chats, runs, tasks or
settings of the one before, whatever it left running."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from helpers.settings import Settings
from tests.support import shared_accounts
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import FakeLLMServer, Reply, last_user_contains, model_is
from tests.support.live_web import log_in
from tests.support.members import Member, api, page
from tests.support.server_process import ServerProcess
from tests.support.shared_accounts import ADMIN, ADMIN_KEY, ADMIN_PASSWORD


def stored_settings(path: Path) -> Settings:
    """What the settings file holds, every field (the page's save writes them all)."""
    return Settings.model_validate(json.loads(path.read_text(encoding="utf-8")))


def notify_long_run(server: ServerProcess) -> float:
    """The setting as the admin's Settings page reads it."""
    admin = log_in(server, ADMIN, ADMIN_PASSWORD)
    return float(page(admin, server, "GET", "/api/settings").json()["notify_long_run"])


def test_a_module_leaves_no_user_run_task_or_setting_behind(
    accounts_server: ServerProcess, llm: FakeLLMServer
):
    stored = accounts_server.usr_dir / "settings.json"
    before, found = stored_settings(stored), notify_long_run(accounts_server)
    held = threading.Event()
    llm.add_rule(model_is("util-model"), Reply("Named"))
    llm.add_rule(last_user_contains("hold on"), Reply(answer("let go"), gate=held))
    try:
        with shared_accounts.for_module(accounts_server, notify_long_run=found + 1) as cadre:
            assert notify_long_run(cadre) == found + 1
            assert stored_settings(stored) != before
            ann = Member(cadre, ADMIN_KEY)
            chats = [
                api(cadre, "POST", "/message", key, {"message": "hold on", "wait": False})
                .json()["context_id"] for key in (ann.key, ADMIN_KEY)
            ]  # fmt: skip
            task = api(cadre, "POST", "/tasks", ADMIN_KEY,
                       {"name": "left", "prompt": "x", "kind": "adhoc"})  # fmt: skip
            assert task.status_code == 201, task.text
            for key, chat_id in zip((ann.key, ADMIN_KEY), chats, strict=True):
                wait_for(lambda k=key, c=chat_id: api(cadre, "GET", f"/chats/{c}", k)
                         .json()["running"], what="a held run")  # fmt: skip
        # Her account, key, chat and folder are gone; the admin's run stopped, the task too.
        users = api(accounts_server, "GET", "/users", ADMIN_KEY).json()["users"]
        assert ann.name not in {u["name"] for u in users}
        assert api(accounts_server, "GET", "/chats", ann.key).status_code == 401
        assert not (accounts_server.usr_dir / "chats" / chats[0]).exists()
        assert not (accounts_server.usr_dir / "users" / ann.name).exists()
        assert not api(accounts_server, "GET", f"/chats/{chats[1]}", ADMIN_KEY).json()["running"]
        tasks = api(accounts_server, "GET", "/tasks", ADMIN_KEY).json()["tasks"]
        assert task.json()["id"] not in {t["id"] for t in tasks}
        # The settings as they were, on disk and at work.
        assert stored_settings(stored) == before
        assert notify_long_run(accounts_server) == found
    finally:
        held.set()
