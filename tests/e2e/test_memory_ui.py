"""The memory panel in Chromium: list, search, edit and delete what the agents remembered.

One server for the module (embeddings on the fake model server, so a search goes by
meaning too); each test keeps to its own memory area, except the one about the default.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.store import MemoryStore
from tests.e2e.conftest import open_page
from tests.support.fake_llm import fake_embedding
from tests.support.live_web import live_server
from tests.support.server_process import ServerProcess


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server) -> Iterator[ServerProcess]:
    server = live_server(tmp_path_factory.mktemp("memory-ui"), _fake_llm_server.base_url)
    yield server
    server.stop()


@pytest.fixture
def page(browser, request, cadre) -> Iterator[object]:
    yield from open_page(browser, request, cadre.url)


def area_store(cadre: ServerProcess, area: str) -> MemoryStore:
    return MemoryStore(Path(cadre.env["CADRE_USR_DIR"]) / "memory" / area / "memory.db")


def open_area(page, area: str, count: int) -> None:
    """Open the panel on `area` and wait for its `count` memories."""
    page.get_by_test_id("memory-open").click()
    page.locator(f"[data-testid=memory-area] option[value={area}]").wait_for(state="attached")
    page.get_by_test_id("memory-area").select_option(area)
    page.wait_for_function(
        f"() => document.querySelectorAll('[data-testid=memory-item]').length === {count}"
    )


#: Whether the middle of the toast saying `text` is drawn on top (not under a dialog).
TOAST_ON_TOP = """(text) => {
    const toast = [...document.querySelectorAll('[data-testid="toast"]')]
        .find((el) => el.textContent.includes(text));
    const box = toast.getBoundingClientRect();
    const top = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
    return toast.contains(top);
}"""


def test_the_memory_panel_searches_edits_and_deletes(page, cadre):
    page.get_by_test_id("new-chat").click()
    page.wait_for_function("() => location.hash.startsWith('#/chat/')")
    chat_id = page.evaluate("decodeURIComponent(location.hash.slice('#/chat/'.length))")
    store = area_store(cadre, "default")
    tabs = store.save("The user prefers tabs", "main", f"chat {chat_id}", ["style"])
    store.save("Deploy with docker compose", "solutions")
    page.get_by_test_id("memory-open").click()
    items = page.get_by_test_id("memory-item")
    items.nth(1).wait_for()
    assert items.count() == 2
    # Where it came from: the chat by its name, not its id.
    row = page.locator(f'[data-testid="memory-item"][data-memory-id="{tabs.id}"]')
    meta = row.locator(".memory-meta").inner_text()
    assert "from the chat “New chat”" in meta and chat_id not in meta

    page.get_by_test_id("memory-query").fill("tabs")
    page.wait_for_function(  # the first search may load litellm in the server: allow for it
        "() => document.querySelectorAll('[data-testid=memory-item]').length === 1",
        timeout=30_000,
    )
    row = items.first
    assert row.get_attribute("data-memory-id") == tabs.id and "style" in row.inner_text()
    row.get_by_test_id("memory-text").fill("The user prefers four spaces")
    row.get_by_test_id("memory-save").click()
    page.get_by_test_id("toast").filter(has_text="Memory saved").wait_for()
    # Drawn above the open panel, not under it (where nothing seemed to happen).
    assert page.evaluate(TOAST_ON_TOP, "Memory saved")
    assert store.get(tabs.id).text == "The user prefers four spaces"
    assert [m.id for m in store.search("spaces")] == [tabs.id]  # the keyword index follows

    row.get_by_test_id("memory-delete").click()
    row.get_by_test_id("memory-delete-yes").click()
    page.get_by_test_id("memory-empty").wait_for()
    assert store.get(tabs.id) is None and store.count() == 1


def test_the_area_menu_lists_each_area_once(page, cadre):
    area_store(cadre, "default").save("Default area memory", "main")
    area_store(cadre, "project-x").save("A project's memory", "main")
    page.get_by_test_id("memory-open").click()
    page.get_by_test_id("memory-item").first.wait_for()
    options = page.locator("[data-testid=memory-area] option")
    values = options.evaluate_all("os => os.map(o => o.value)")
    labels = options.all_inner_texts()
    assert len(values) == len(set(values)) and "" not in values
    assert {"default", "project-x"} <= set(values)
    defaults = [label for label in labels if "default" in label.lower()]
    assert defaults == [labels[values.index("default")]]
    assert page.get_by_test_id("memory-area").input_value() == "default"


def unrelated_word(texts: list[str]) -> str:
    """A word in none of `texts` whose (fake) embedding is weakly related to them all:
    a cosine of 0 or more to one of them (a minimum score of 0 lists it), under 0.3 to each."""
    vectors = [fake_embedding(t) for t in texts]
    for n in range(1000):
        word = f"zebra{n}"
        query = fake_embedding(word)
        scores = [math.fsum(a * b for a, b in zip(query, v, strict=True)) for v in vectors]
        if 0 <= max(scores) < 0.3:
            return word
    raise AssertionError("no weakly related word found")


def test_a_search_nothing_matches_lists_nothing(page, cadre):
    texts = ["The user likes green tea", "The build uses make"]
    store = area_store(cadre, "searching")
    for text in texts:
        store.save(text, "main")
    open_area(page, "searching", 2)

    page.get_by_test_id("memory-query").fill(unrelated_word(texts))
    page.get_by_test_id("memory-empty").filter(has_text="No memories match").wait_for(
        timeout=30_000  # the first search may load litellm in the server
    )
    assert page.get_by_test_id("memory-item").count() == 0

    page.get_by_test_id("memory-query").fill("tea")
    page.get_by_test_id("memory-item").first.wait_for()
    assert page.get_by_test_id("memory-text").input_value() == texts[0]
    assert page.get_by_test_id("memory-item").count() == 1


def test_delete_asks_first_and_no_keeps_the_memory(page, cadre):
    store = area_store(cadre, "deleting")
    kept = store.save("Keep me", "main")
    open_area(page, "deleting", 1)
    row = page.get_by_test_id("memory-item").first

    row.get_by_test_id("memory-delete").click()
    confirm = row.get_by_test_id("memory-delete-confirm")
    assert "Delete this memory?" in confirm.inner_text()
    no = row.get_by_test_id("memory-delete-no")
    assert no.evaluate("el => el === document.activeElement")  # the safe answer has the focus
    page.keyboard.press("Enter")
    confirm.wait_for(state="hidden")
    assert row.get_by_test_id("memory-delete").evaluate("el => el === document.activeElement")
    assert store.get(kept.id) is not None

    page.keyboard.press("Enter")  # Delete again, from the keyboard; Escape is No as well
    confirm.wait_for()
    page.keyboard.press("Escape")
    confirm.wait_for(state="hidden")
    assert page.get_by_test_id("memory").is_visible()  # only the question closed

    page.keyboard.press("Enter")
    row.get_by_test_id("memory-delete-yes").focus()
    page.keyboard.press("Enter")
    page.get_by_test_id("memory-empty").wait_for()
    assert store.get(kept.id) is None
