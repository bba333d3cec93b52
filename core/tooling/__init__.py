"""Tools at work: finding a tool's file and class, which tools an agent is offered and
why one is not, calling the chosen one, MCP servers' tools as agent tools, and Agent
Zero's tools running as they are. What a tool is (`Tool`, `Response`) is
core/tool.py's, the module tool authors import."""
