"""The web layer: Flask app, Socket.IO events, external API. Sits above agent.py."""
