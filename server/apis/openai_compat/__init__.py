"""The OpenAI-compatible endpoint `/v1`: its routes (endpoint.py), the wire format
(wire.py), a request as a run of Agent 0 (calls.py), its progress (progress.py) and
which chat continues a conversation (conversations.py)."""
