"""The memory panel in Chromium: list, search, edit and delete what the agents remembered."""

from __future__ import annotations

from helpers.memory_store import MemoryStore


def test_the_memory_panel_searches_edits_and_deletes(page, usr_dir):
    store = MemoryStore(usr_dir / "memory" / "default" / "memory.db")
    tabs = store.save("The user prefers tabs", "main", "chat a", ["style"])
    store.save("Deploy with docker compose", "solutions")
    page.get_by_test_id("memory-open").click()
    items = page.get_by_test_id("memory-item")
    items.nth(1).wait_for()
    assert items.count() == 2

    page.get_by_test_id("memory-query").fill("tabs")
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=memory-item]').length === 1"
    )
    row = items.first
    assert row.get_attribute("data-memory-id") == tabs.id and "style" in row.inner_text()
    row.get_by_test_id("memory-text").fill("The user prefers four spaces")
    row.get_by_test_id("memory-save").click()
    page.get_by_test_id("toast").filter(has_text="Memory saved").wait_for()
    assert store.get(tabs.id).text == "The user prefers four spaces"
    assert [m.id for m in store.search("spaces")] == [tabs.id]  # the keyword index follows

    row.get_by_test_id("memory-delete").click()
    page.get_by_test_id("memory-empty").wait_for()
    assert store.get(tabs.id) is None and store.count() == 1
