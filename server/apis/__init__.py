"""The APIs other programs call, each behind the one API-key check (key.py).

- native.py: Cadre's own `/api/v1` (messages, chats, projects; tasks in routes/tasks.py);
- openai_compat/: the OpenAI-compatible `/v1` (chat completions, models);
- agent_zero.py: Agent Zero's `/api_message`, so its clients work unchanged;
- mcp_server/: the MCP server at `/mcp` (a WSGI middleware, its tools, their progress).

They start a message and wait for its answer the same way (agent_calls.py).
"""
