"""Evaluations: a suite of tasks (a YAML file) run against a profile and a model, each task in
a fresh chat, its outcome checked; a table, a JSON result and an HTML report, and the
comparison with an earlier result.

suite.py reads a suite, checks.py judges one run, runner.py runs a suite on a chat store,
results.py holds what came out (and compares two results), table.py and html_report.py
show it, places.py says where suites and results live, cli.py is `python3 cadre.py eval`
and service.py the page's runs (server/routes/evals.py).
"""
