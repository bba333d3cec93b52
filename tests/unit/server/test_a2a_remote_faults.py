"""A2A as a client: a remote card naming an endpoint with a port that is no port is a remote
fault the agent reads, and run artifacts never carry a file from outside the work folder."""

from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace

import pytest

from helpers import a2a_remote
from helpers.a2a_agents import A2aAgent
from server.apis.a2a import executor
from tests.support.a2a_cards import card_server


@pytest.mark.parametrize(
    "bad", ["http://127.0.0.1:abc/a2a", "http://127.0.0.1:99999/a2a", "http://127.0.0.1:1:2/a2a"]
)
def test_a_card_with_a_malformed_endpoint_is_a_remote_fault_not_a_crash(bad):
    card = card_server(lambda _port: bad)
    agent = A2aAgent(name="liar", url=card.url, key="k-1234")

    async def noop(_line):
        return None

    try:
        with pytest.raises(a2a_remote.RemoteFault):
            asyncio.run(a2a_remote.ask(agent, "hi", "", noop))
    finally:
        card.stop()


def test_run_artifacts_never_include_a_hard_link_to_a_file_outside(tmp_path, monkeypatch):
    # Every other reader of an agent's files (helpers/confine.py, the Telegram bridge's
    # produced_files.read_file) refuses hard links and Cadre's own secret files; the A2A
    # artifacts read with path.read_bytes().
    work = tmp_path / "work"
    work.mkdir()
    secret = tmp_path / "settings.json"
    secret.write_text('{"api_key": "k-top-secret"}')
    os.link(secret, work / "notes.txt")
    monkeypatch.setattr(executor, "work_dir", lambda setting, space: work)
    chat = SimpleNamespace(
        id="c1", space=None, config=SimpleNamespace(settings=SimpleNamespace(work_dir=""))
    )
    produced = executor._produced(chat, 0.0)
    assert all(b"k-top-secret" not in (p.data or b"") for p in produced), produced
