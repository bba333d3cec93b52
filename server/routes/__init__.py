"""The page's HTTP routes, one module per thing the page serves, and what they share.

Served: pages.py (the page, its static files, /health, profiles, a chat's files),
chats.py and chat_variables.py, chat_steps.py, chat_browser.py (a chat's habits,
variables, failed steps, browser screenshots), files.py (the file panel, with
file_places.py and file_ops.py), settings.py, setup.py (a model's set-up),
projects.py, memory.py, skills.py, tasks.py, backups.py, mcp_servers.py (the MCP
client's servers).

Shared, here where the routes find them: routing.py (the chat store, bodies, error
replies by error type), json_body.py (bounded JSON), payloads.py (validated shapes of
what browsers and API clients send), views.py (what they see of chats, settings,
profiles), attachments.py (files attached to messages).
"""
