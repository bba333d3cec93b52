"""Replay of a saved chat: the same user messages, the model's recorded replies instead of
new calls, the tools run again or their recorded results (issue 38).

`record.py` reads what a saved chat holds into each agent's steps; `compare.py` says
whether a tool's result now is the recorded one; `session.py` is a replay under way (the
model every agent of the replay chat is given, and the recorded results of tools).
Making the replay chat and feeding it its messages is the chat store's
(store/replaying.py).
"""
