"""Fixtures for tests of the web layer: a built server (not listening) and its clients."""

from __future__ import annotations

import pytest

from initialize import ChatFactory
from server.app import create_app
from store.chats import ChatManager


@pytest.fixture
def server(llm, runtime):
    """The app, Socket.IO and the pusher over a fresh chat store, for test clients."""
    chats = ChatManager(runtime, ChatFactory(runtime))
    chats.load_saved()
    built = create_app(chats)
    built.pusher.start()
    yield built
    built.pusher.stop()
    built.mcp.stop()


@pytest.fixture
def http(server):
    """A test client that, like the page, sends the CSRF token it asked for."""
    client = server.app.test_client()
    client.environ_base["HTTP_X_CSRF_TOKEN"] = client.get("/api/csrf").json["token"]
    return client


@pytest.fixture
def sio(server, http):
    """A Socket.IO test client sharing the HTTP client's session."""
    client = server.socketio.test_client(server.app, flask_test_client=http)
    yield client
    if client.is_connected():
        client.disconnect()
