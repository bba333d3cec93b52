"""Fixtures for tests of the web layer: a built server (not listening) and its clients."""

from __future__ import annotations

import pytest

from helpers.chats import ChatManager
from helpers.server.app import create_app
from initialize import ChatFactory


@pytest.fixture
def server(llm, runtime):
    """The app, Socket.IO and the pusher over a fresh chat store, for test clients."""
    chats = ChatManager(runtime, ChatFactory(runtime))
    chats.load_saved()
    built = create_app(chats)
    built.pusher.start()
    yield built
    built.pusher.stop()


@pytest.fixture
def http(server):
    return server.app.test_client()
