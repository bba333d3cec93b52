"""Running code for agents: terminal, Python and Node.js sessions and their processes.

Depends only on `helpers`. See docs/architecture.md.
"""
