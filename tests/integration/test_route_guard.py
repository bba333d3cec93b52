"""Every route of the app is closed without a login, and every change needs the CSRF
token, except an explicit list; a route added later is checked without a new test."""

from __future__ import annotations

import itertools

import pytest
from werkzeug.routing import AnyConverter, Rule

API_KEY = "k-route-guard-0123456789"
#: (method, path) anyone may reach when a login is set. Nothing else.
OPEN = {
    ("GET", "/health"),
    ("GET", "/login"),
    ("POST", "/login"),
    ("GET", "/api/csrf"),
    ("GET", "/js/login.js"),
    ("GET", "/js/http.js"),
    # An invite's page, and its answer: its one-time token is its key.
    ("GET", "/invite"),
    ("GET", "/api/invite"),
    ("POST", "/api/invite"),
    # Single sign-on: what the login page offers, and the way to the provider and back (the
    # state that comes back must match this browser's cookie: server/security/oidc.py).
    ("GET", "/api/login/methods"),
    ("GET", "/login/oidc"),
    ("GET", "/login/oidc/callback"),
}
#: Folders of files the login page may need before a login (styles, images, libraries).
OPEN_FOLDERS = {"css", "img", "vendor"}
CHANGES = {"POST", "PUT", "PATCH", "DELETE"}


@pytest.fixture
def locked(monkeypatch, server):
    monkeypatch.setenv("CADRE_AUTH_LOGIN", "ada")
    monkeypatch.setenv("CADRE_AUTH_PASSWORD", "correct horse")
    monkeypatch.setenv("CADRE_API_KEY", API_KEY)
    return server


def requests_of(rule: Rule) -> list[tuple[str, str]]:
    """Every (method, path) of `rule`, with each `any(...)` choice and a made-up value
    for the other arguments."""
    choices = []
    for name in rule.arguments:
        converter = rule._converters[name]
        if isinstance(converter, AnyConverter):
            choices.append([(name, item) for item in sorted(converter.items)])
        elif name == "name":
            choices.append([(name, "app.js")])
        else:
            choices.append([(name, "made-up-id")])
    methods = sorted((rule.methods or set()) - {"HEAD", "OPTIONS"})
    adapter = rule.map.bind("localhost")
    paths = [adapter.build(rule.endpoint, dict(c)) for c in itertools.product(*choices)]
    return [(method, path) for method in methods for path in paths]


def is_open(method: str, path: str) -> bool:
    return (method, path) in OPEN or (method == "GET" and path.split("/")[1] in OPEN_FOLDERS)


def every_request(server) -> list[tuple[str, str]]:
    found = [r for rule in server.app.url_map.iter_rules() for r in requests_of(rule)]
    assert len(found) > 25  # every blueprint registered
    # The file panel's routes (issue 22) are the page's: login and CSRF, no exception.
    assert {("GET", "/api/files/raw"), ("POST", "/api/files/upload")} <= set(found)
    # Issues 23 and 24's: backups, projects, the scheduler (page and external API).
    assert {
        ("POST", "/api/backup"), ("POST", "/api/backup/preview"), ("POST", "/api/backup/restore"),
        ("GET", "/api/backup/parts"), ("POST", "/api/projects"),
        ("PATCH", "/api/projects/app.js"), ("DELETE", "/api/projects/app.js"),
        ("POST", "/api/tasks"), ("PATCH", "/api/tasks/made-up-id"),
        ("POST", "/api/tasks/made-up-id/run"), ("POST", "/api/v1/tasks"),
        ("DELETE", "/api/v1/projects/app.js"),
    } <= set(found)  # fmt: skip
    return found


def test_every_route_is_closed_without_a_session(locked):
    client = locked.app.test_client()
    token = client.get("/api/csrf").json["token"]
    for method, path in every_request(locked):
        response = client.open(path, method=method, headers={"X-CSRF-Token": token}, json={})
        where = f"{method} {path}"
        refused = response.status_code == 401 and "log in first" in response.get_data(as_text=True)
        if is_open(method, path):
            assert not refused, where
        elif path == "/":
            assert response.status_code == 302 and response.location.endswith("/login"), where
        elif path.startswith("/api/v1/"):
            assert response.status_code == 401 and "X-API-Key" in response.json["error"], where
        elif path == "/api_message":  # Agent Zero's API: the same key, its header's spelling
            assert response.status_code == 401 and "X-API-KEY" in response.json["error"], where
        elif path.startswith("/v1/"):  # the OpenAI-compatible endpoint: its own key, its shape
            assert response.status_code in (401, 403), where
            assert response.json["error"]["type"] in ("authentication_error", "permission_error")
        else:
            assert refused, where


def test_every_change_needs_the_csrf_token(locked):
    client = locked.app.test_client()
    token = client.get("/api/csrf").json["token"]
    logged_in = client.post("/login", json={"login": "ada", "password": "correct horse"},
                            headers={"X-CSRF-Token": token})  # fmt: skip
    assert logged_in.status_code == 200
    changes = [(m, p) for m, p in every_request(locked) if m in CHANGES]
    assert len(changes) > 10
    for method, path in changes:
        if path.startswith(("/api/v1/", "/v1/")) or path == "/api_message":
            continue  # the external APIs and the OpenAI one are not the page's: a key guards
        for headers in ({}, {"X-CSRF-Token": "forged"}):
            response = client.open(path, method=method, headers=headers, json={})
            assert response.status_code == 403, f"{method} {path}"
            assert "CSRF" in response.json["error"]
    assert client.get("/api/settings").status_code == 200  # still logged in: nothing ran
