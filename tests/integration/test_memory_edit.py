"""The Memory panel's edit and delete: a change to an area that does not exist creates nothing."""

from __future__ import annotations

from memory import memories
from memory.store import area_path


def test_editing_or_deleting_in_a_missing_area_creates_no_area(http, usr_dir):
    edited = http.post("/api/memory/abc123?area=nowhere", json={"text": "changed"})
    assert edited.status_code == 404
    assert "no memory 'abc123'" in edited.get_json()["error"]
    deleted = http.post("/api/memory/delete?area=nowhere", json={"ids": ["abc123"]})
    assert deleted.get_json() == {"deleted": 0}
    assert not (usr_dir / "memory" / "nowhere").exists()
    assert http.get("/api/memory").get_json()["areas"] == []


def test_an_edit_in_an_existing_area_still_works(http, usr_dir):
    saved = memories.store_at(area_path("work")).save("Ship on Fridays")
    edited = http.post(f"/api/memory/{saved.id}?area=work", json={"text": "Ship on Mondays"})
    assert edited.get_json() == {"ok": True}
    listed = http.get("/api/memory?area=work").get_json()["memories"]
    assert [m["text"] for m in listed] == ["Ship on Mondays"]
    missing = http.post("/api/memory/nope?area=work", json={"text": "x"})
    assert missing.status_code == 404
