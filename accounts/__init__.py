"""The people who use Cadre: users with a role, their passwords and API keys.

`users.py` keeps the accounts (usr/users.json), `passwords.py` hashes and checks
passwords, `keys.py` keeps every user's API keys (usr/api_keys.json). A user's
name owns their chats, memory, projects, work folder and keys (the `owner` of a
chat and of its run context); with no user at all, Cadre is the one-person
desktop app it always was and every owner is None.
"""
