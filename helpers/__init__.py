"""The foundation every package stands on: settings, files, paths, errors, text, the runtime.

Imports nothing of Cadre outside itself. See docs/architecture.md.
"""
