"""Chats on disk and in memory: the chat store, saving and loading, search, naming, results.

The application layer over the loop (`core/`); the server uses it. See docs/architecture.md.
"""
