"""The agent loop's parts and the runner: a run, its steps, tools, history and budgets.

Below `agent.py`; above `models`, `profiles`, `memory`, `execution` and `helpers`.
See docs/architecture.md.
"""
