"""The admins' cluster view in Chromium (webui/js/views/cluster.js).

Two real run_ui.py nodes on one real redis-server and one shared usr/ folder, and a third
process alone, all started at once for the module. On node A, Settings offers Cluster…:
its dialog lists both nodes, marks node A as this node, shows the chat that runs (held by
the fake model) on the node that runs it, and says Redis's error when Redis stops. In the
process alone, Settings offers no Cluster button at all. axe checks the dialog in both
themes; screenshots at desktop and phone sizes go to /tmp/cluster-ui-*.png.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.e2e.conftest import open_page
from tests.support.agents import answer, cut_before, wait_for
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import live_server
from tests.support.redis_server import RedisServer
from tests.support.server_process import ServerProcess

API_KEY = "k-cluster-ui-0123456789"
NAMES = ("node-a", "node-b")
SHOTS = Path("/tmp")
DIALOG = '[data-testid="cluster"]'


@pytest.fixture(scope="module")
def servers(tmp_path_factory, _fake_llm_server, redis_server: RedisServer
            ) -> Iterator[dict[str, ServerProcess]]:  # fmt: skip
    """node-a and node-b (one Redis, one usr/) and `alone` (no Redis), started together."""
    redis_server.client().flushdb()
    usr = tmp_path_factory.mktemp("cluster-ui") / "usr"
    usr.mkdir()
    base = _fake_llm_server.base_url
    folders = {name: tmp_path_factory.mktemp(name) for name in (*NAMES, "alone")}

    def node(name: str) -> ServerProcess:
        return live_server(folders[name], base, api_key=API_KEY, usr_dir=str(usr),
                           redis_url=redis_server.url, node_id=name, node_ttl="2",
                           drain_grace="0")  # fmt: skip

    # Together: each start is mostly its own imports, and the module's time is their sum.
    with ThreadPoolExecutor(3) as pool:
        futures = {name: pool.submit(node, name) for name in NAMES}
        futures["alone"] = pool.submit(live_server, folders["alone"], base)
        done = {name: (future.exception() or future.result()) for name, future in futures.items()}
    started = {name: s for name, s in done.items() if isinstance(s, ServerProcess)}
    try:
        for failed in done.values():
            if isinstance(failed, BaseException):
                raise failed
        yield started
    finally:
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(ServerProcess.stop, started.values()))


@pytest.fixture
def fake(servers, llm):
    llm.add_rule(model_is("util-model"), Reply("Named"))
    return llm


@pytest.fixture
def page(browser, request, servers) -> Iterator[object]:
    """A page on node A (axe runs in it: the page's CSP would refuse its script)."""
    yield from open_page(browser, request, servers["node-a"].url, bypass_csp=True)


@pytest.fixture
def page_alone(browser, request, servers) -> Iterator[object]:
    yield from open_page(browser, request, servers["alone"].url)


def cluster_rows(server: ServerProcess) -> dict[str, dict]:
    found = requests.get(server.url + "/api/cluster", headers={"X-API-Key": API_KEY}, timeout=10)
    assert found.status_code == 200, found.text
    return {row["node"]: row for row in found.json()["nodes"]}


def open_cluster(page) -> None:
    """Settings, then Cluster… once Settings has asked whether this Cadre is a cluster."""
    with page.expect_response("**/api/cluster"):
        page.get_by_test_id("settings-open").click()
    page.get_by_test_id("settings-cluster").click()
    page.locator(f'{DIALOG} [data-testid="cluster-status"]').filter(
        has_text="checked at"
    ).wait_for()


def node_row(page, name: str):
    return page.locator(f'[data-testid="cluster-node"][data-node="{name}"]')


def no_violations(page) -> None:
    found = axe_violations(page, DIALOG)
    assert not found, f"axe on the cluster dialog:\n{describe(found)}"


def test_an_admin_sees_every_node_its_load_and_its_chats(page, servers, fake, redis_server):
    gate = threading.Event()
    fake.script(Reply(cut_before(answer("Held for the cluster view."), "Held"), holds={1: gate}))
    a = servers["node-a"]
    sent = requests.post(a.url + "/api/v1/message", json={"message": "hold on", "wait": False},
                         headers={"X-API-Key": API_KEY}, timeout=30)  # fmt: skip
    assert sent.status_code == 200, sent.text
    chat_id = sent.json()["context_id"]
    # The heartbeat (every TTL / 3) counts the run on the node that took it.
    runner = wait_for(lambda: next((n for n, row in cluster_rows(a).items()
                                    if row["chats"] == [chat_id] and row["runs"] == 1), None),
                      timeout=20, what="the run counted by its node's heartbeat")  # fmt: skip
    try:
        open_cluster(page)
        rows = page.get_by_test_id("cluster-node")
        assert rows.evaluate_all("(els) => els.map((el) => el.dataset.node)") == list(NAMES)
        assert node_row(page, "node-a").get_by_test_id("cluster-this").inner_text() == "this node"
        assert node_row(page, "node-b").get_by_test_id("cluster-this").count() == 0
        assert "2 nodes in this cluster" in page.get_by_test_id("cluster-status").inner_text()
        busy = node_row(page, runner)
        assert busy.get_by_test_id("cluster-load").inner_text() == "1 of 32 (3%)"
        assert busy.get_by_test_id("cluster-chats").inner_text() == chat_id[:8] + "…"
        idle = node_row(page, next(n for n in NAMES if n != runner))
        assert idle.get_by_test_id("cluster-chats").inner_text() == "none"
        assert page.get_by_test_id("cluster-draining").count() == 0
        no_violations(page)
        page.screenshot(path=str(SHOTS / "cluster-ui-desktop.png"))
        page.emulate_media(reduced_motion="reduce")  # the drawers take their places at once
        page.set_viewport_size({"width": 390, "height": 844})
        page.screenshot(path=str(SHOTS / "cluster-ui-phone.png"))
        page.emulate_media(color_scheme="dark")
        no_violations(page)
        page.screenshot(path=str(SHOTS / "cluster-ui-phone-dark.png"))

        gate.set()
        wait_for(lambda: cluster_rows(a)[runner]["runs"] == 0, timeout=20,
                 what="the run's end counted")  # fmt: skip
        page.get_by_test_id("cluster-refresh").click()
        busy.get_by_test_id("cluster-chats").filter(has_text="none").wait_for()
        assert busy.get_by_test_id("cluster-load").inner_text() == "0 of 32 (0%)"

        # Redis stops: the dialog says so, in the server's words, and lists nothing.
        redis_server.stop()
        try:
            page.get_by_test_id("cluster-refresh").click()
            error = page.get_by_test_id("cluster-error")
            error.filter(has_text="does not answer").wait_for()
            assert "Check that Redis runs" in error.inner_text()
            assert rows.count() == 0
            page.screenshot(path=str(SHOTS / "cluster-ui-redis-down.png"))
        finally:
            redis_server.start()
        page.get_by_test_id("cluster-close").click()
        # Back in Settings, as it was left.
        assert page.get_by_test_id("settings").is_visible()
    finally:
        gate.set()


def test_a_process_alone_offers_no_cluster_button(page_alone):
    with page_alone.expect_response("**/api/cluster") as answered:
        page_alone.get_by_test_id("settings-open").click()
    assert answered.value.json()["cluster"] is False
    page_alone.get_by_test_id("settings-save").wait_for()
    assert page_alone.get_by_test_id("settings-cluster").is_hidden()
