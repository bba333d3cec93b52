"""A result as plain text for a terminal: a row per task (pass rate, tokens, cost, time), the
overall row, what failed and why, the comparison with an earlier result, and last the line
`passed X of Y` (programs read it)."""

from __future__ import annotations

from evals.results import EvalResult, TaskChange

HEADERS = ("task", "passed", "rate", "tokens", "cost (USD)", "time (s)")


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.0f}%"


def rows(result: EvalResult) -> list[tuple[str, ...]]:
    """The table's rows: one per task, then the overall one."""
    found = [
        (s.name, f"{s.passed}/{s.runs}", _rate(s.rate if s.runs else None), f"{s.tokens:,}",
         f"{s.cost:.4f}", f"{s.seconds:.1f}")
        for s in result.summaries()
    ]  # fmt: skip
    tokens = sum(run.tokens for run in result.runs)
    cost = sum(run.cost for run in result.runs)
    overall = result.passed / result.total if result.total else None
    found.append(("overall", f"{result.passed}/{result.total}", _rate(overall), f"{tokens:,}",
                  f"{cost:.4f}", f"{result.seconds:.1f}"))  # fmt: skip
    return found


def _grid(headers: tuple[str, ...], body: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in [headers, *body]) for i in range(len(headers))]

    def line(row: tuple[str, ...]) -> str:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        return "  ".join(cells).rstrip()

    return [line(headers), "  ".join("-" * w for w in widths), *map(line, body)]


def render(result: EvalResult, changes: list[TaskChange] | None = None) -> str:
    """The whole report as text, ending with `passed X of Y`."""
    model = f", model {result.model}" if result.model else ""
    lines = [f"suite {result.suite}: profile {result.profile}{model}, each task "
             f"{result.repeat} time{'s' if result.repeat != 1 else ''}", ""]  # fmt: skip
    table = rows(result)
    lines += [*_grid(HEADERS, table[:-1]), _grid(HEADERS, table)[-1]]
    failures = [run for run in result.runs if not run.passed]
    if failures:
        lines += ["", "failed:"]
        for run in failures:
            why = run.error or "; ".join(
                f"{c.description}: {c.detail}" if c.detail else c.description
                for c in run.checks if not c.passed
            )  # fmt: skip
            lines.append(f"  {run.task} (run {run.attempt}, chat {run.chat_id}): {why}")
    if changes is not None:
        lines += ["", "compared with the earlier result:"]
        moved = [c for c in changes if c.change != "same"]
        for change in moved:
            lines.append(f"  {change.name}: {change.change} ({_rate(change.before)} -> "
                         f"{_rate(change.now)})")  # fmt: skip
        if not moved:
            lines.append("  no task got better or worse")
    lines += ["", f"passed {result.passed} of {result.total}"]
    return "\n".join(lines)
