"""Language models: the client seam, providers, the built-in local model, token counts.

Depends only on `helpers`. See docs/architecture.md.
"""
