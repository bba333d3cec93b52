"""The MCP server at `/mcp`: the WSGI middleware that serves it (endpoint.py), the
tools MCP clients call (tools.py) and the progress a long call tells (progress.py)."""
