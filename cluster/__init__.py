"""Cluster mode: several Cadre processes (nodes) sharing the work through one Redis.

Off by default: without `CADRE_REDIS_URL` Cadre is one process with its files, as ever,
and nothing here imports redis-py (`node_for` gives the `Alone` node). With it, each
process is a node with an id (`CADRE_NODE_ID`) that announces itself in Redis with a
heartbeat (`membership.py`), and the web layer's Socket.IO events go through Redis
(Flask-SocketIO's message queue), so a page connected to any node hears them.

config.py reads the switch; node.py is the seam the server asks (this node's name, its
place in `/health`, the live nodes); redis_node.py is the node in a cluster, the one module
that imports redis-py. docs/scaling.md has the design and what comes next.
"""
