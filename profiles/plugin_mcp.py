"""MCP server entries a plugin brings, laid beside the `mcp_servers` setting's.

A plugin's `mcp_servers` (plugin.yaml) are entries of the same form as the setting's
`mcpServers` (helpers/mcp_config.py). `with_plugin_servers(text)` gives the setting's text
with the entries of every plugin switched on globally (MCP servers are the server's, not a
project's or a profile's; a profile still narrows which ones its agents use) added: a
server of the setting's own of the same name wins, an entry that is not usable is left out
and recorded as the plugin's problem (the Plugins panel shows it), never an error of the
settings. Everything that puts the setting to work (start-up, a settings save, a restored
backup, a plugin switched, installed or removed) applies this text instead.
"""

from __future__ import annotations

import json
from typing import Any

from helpers.mcp_config import McpConfigError, parse_mcp_servers
from profiles.plugins import active_plugins, record_problem


def with_plugin_servers(text: str) -> str:
    """`text` (the setting's value) with the active plugins' MCP servers added."""
    extra: dict[str, Any] = {}
    for plugin in active_plugins():
        for name, entry in (plugin.manifest.mcp_servers if plugin.manifest else {}).items():
            try:
                parse_mcp_servers(json.dumps({"mcpServers": {name: entry}}))
            except McpConfigError as exc:
                record_problem(plugin.name, f"MCP server {name}", str(exc))
                continue
            extra.setdefault(name, entry)
    if not extra:
        return text
    try:
        data = json.loads(text) if text.strip() else {"mcpServers": {}}
        own = data["mcpServers"]
    except (ValueError, KeyError, TypeError):
        return text  # the setting itself is refused where it is read: left as it is
    return json.dumps({"mcpServers": {**extra, **own}})
