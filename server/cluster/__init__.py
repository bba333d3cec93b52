"""The server as one node of a cluster (cluster mode, docs/scaling.md): which node runs a
chat (`placement.py`), requests handed to the node that runs their chat (`relay.py`), and
chats of a dead node taken over (`takeover.py`). Nothing here is used by a process alone.
"""
