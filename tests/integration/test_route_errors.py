"""Every route answers an error by its kind, the same way: an unknown chat is a 404 on
every route that names one, a bad body a 400 that says where; a route added later is
checked without a new test."""

from __future__ import annotations

import pytest

API_KEY = "k-route-errors-0123456789"
#: A body every JSON route accepts as well formed (each reads the fields it knows).
WELL_FORMED = {"message": "hi", "item_id": "item1", "approved": True, "text": "t", "ids": ["m"]}


@pytest.fixture(autouse=True)
def _api_key(monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", API_KEY)


def chat_routes(server) -> list[tuple[str, str]]:
    """(method, path) of every route that names a chat, for a chat that does not exist."""
    adapter = server.app.url_map.bind("localhost")
    found = []
    for rule in server.app.url_map.iter_rules():
        if "chat_id" not in rule.arguments:
            continue
        # Any made-up value, or the first a converter takes (`<any(attachments, images):...>`).
        values = {
            arg: min(getattr(rule._converters[arg], "items", None) or ["made-up-id"])
            for arg in rule.arguments
        }
        path = adapter.build(rule.endpoint, {**values, "chat_id": "nosuchchat"})
        found += [(m, path) for m in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"})]
    return found


def test_every_route_naming_an_unknown_chat_answers_404(http, server):
    routes = chat_routes(server)
    assert len(routes) >= 8  # the page's and the API's
    for method, path in routes:
        response = http.open(path, method=method, json=WELL_FORMED,
                             headers={"X-API-Key": API_KEY})  # fmt: skip
        where = f"{method} {path}"
        assert response.status_code == 404, f"{where}: {response.status_code} {response.json}"
        assert response.json == {"error": "no chat with id 'nosuchchat'"}, where


#: Routes that read a JSON object as their body, one per module.
JSON_ROUTES = ["/api/memory/m1", "/api/memory/delete", "/api/setup/models", "/api/v1/message"]


def test_a_body_of_the_wrong_shape_is_a_400_that_says_where(http):
    for path in JSON_ROUTES:
        response = http.post(path, json=["not", "an", "object"], headers={"X-API-Key": API_KEY})
        assert response.status_code == 400, path
        error = response.json["error"]
        assert error.startswith("payload: ") or "must be a JSON object, not a list" in error, path


def test_a_body_that_cannot_be_read_is_never_taken_for_no_body(http):
    """A route whose fields all have defaults acted on an unreadable body as on none."""
    broken = http.patch(
        "/api/v1/tasks/none", data='{"enabled": fals', headers={"X-API-Key": API_KEY,
                                                               "Content-Type": "application/json"},
    )  # fmt: skip
    assert broken.status_code == 400
    assert broken.json["error"].startswith("the body is not JSON")
