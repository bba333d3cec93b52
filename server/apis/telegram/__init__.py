"""The Telegram bot bridge (issue 40): people reach Agent 0 from Telegram.

Long polling (no public address is needed); off unless the `telegram_bot_token` setting is
set, and only the Telegram accounts of `telegram_allowed_users` reach an agent. Each
Telegram chat maps to a Cadre chat of the first admin (the desktop mode's own), kept in
usr/telegram/chats.json; its messages run through the path the other APIs use
(server/apis/agent_calls.py), and each run's answer, its "typing" status and its approval
requests come back through the chat's run events.

The modules, one job each: `config.py` (what the settings say), `chat_map.py` (Telegram
chat → Cadre chats, on disk), `formatting.py` (an answer as Telegram messages: HTML, code
blocks, split at 4,096 characters), `produced_files.py` (files an answer names, sent as
documents), `voice.py` (voice notes as text, through models/voice.py), `outbox.py`
(sending), `watch.py` (a Cadre chat's run events, handed to the bridge's loop),
`approval_buttons.py` (a held tool call as Allow/Deny buttons), `cadre_side.py` (a
Telegram chat's Cadre chats: made, listed, sent to through agent_calls), `conversation.py` (one
update: who, which command, which chat), `poller.py` (getUpdates, reconnecting),
`turns.py` (which node of a cluster polls), `connection.py` (one configuration's bot:
connected, polling, sending what the chats tell; the one importer of python-telegram-bot,
loaded once a token is set), `log_mask.py` (the token kept out of the HTTP client's log)
and `bridge.py` (the service: its thread, started, stopped and changed with the settings).
"""
