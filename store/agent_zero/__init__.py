"""Agent Zero users move in: its chat files read as Cadre chats, its `usr/` folder migrated.

`chat` and `history` convert a chat file (Import, and one found in usr/chats/);
`usr` is the `python3 cadre.py import-agent-zero` command, with `settings`
mapping Agent Zero's model settings to Cadre's.
"""
