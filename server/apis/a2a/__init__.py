"""Cadre as an Agent2Agent (A2A) server: its agent card and the JSON-RPC endpoint."""
