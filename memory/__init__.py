"""Memories and knowledge: the store, keyword and embedding search, what agents recall.

Depends on `models` (embeddings) and `helpers`. See docs/architecture.md.
"""
