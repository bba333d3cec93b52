"""Agent profiles and their prompts: discovery, folder layering, projects, templates.

Depends only on `helpers`. See docs/architecture.md.
"""
