"""The loop: agents, chats, runs, their steps and delegation, and the run context that
everything outside the loop is given instead of the `Agent`.

Above `helpers`, `models`, `profiles`, `execution`, `browsing`, `mcp_client` and
`memory`; `agent.py` is its public face. See docs/architecture.md.
"""
