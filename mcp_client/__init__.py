"""Cadre as an MCP client: connections to the MCP servers of the `mcp_servers` setting.

One supervisor (supervisor.py) keeps a background task per enabled server
(connection.py) on the agents' loop; the servers' tools become agent tools
named `<server>.<tool>` (tools.py describes them, results.py turns their
results into text and files). It sits just above `helpers/` and imports only it.
"""
