"""Cadre as an MCP client: connections to the MCP servers of the `mcp_servers` setting.

One supervisor (supervisor.py) keeps a background task per enabled server
(connection.py) on the agents' loop; the servers' tools become agent tools
named `<server>.<tool>`: tools.py describes them compactly, validation.py
checks a call's arguments, results.py turns a result into text and files,
status.py names what the web layer and the agents see without the SDK. It
sits just above `helpers/` and imports only it; the MCP SDK is imported only
when a server is set up (supervisor.py).
"""
