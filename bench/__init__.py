"""Cadre's benchmarks: figures measured on this machine, printed as one table.

Run `python -m bench` (or `python -m bench --quick`). Each benchmark module
exposes `run(quick: bool) -> list[Row]`; figures are compared with their
targets here, never asserted in tests (these machines are noisy).
"""
