"""A result as one self-contained HTML page: the table, a bar chart of each task's pass rate
(inline SVG; the earlier result's beside it when compared), each run with its checks and a
link to its chat, and the comparison. Everything from the suite or the model is escaped.

Links to chats are `<base>/#/chat/<id>` (the page's address of a chat, webui/js/router.js):
the CLI gives the address Cadre serves on, the panel's report the empty base (same site).
"""

from __future__ import annotations

import time
from html import escape

from evals.results import EvalResult, Run, TaskChange
from evals.table import HEADERS, rows

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d232a;background:#fff;max-width:1100px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
.muted{color:#5b6570}table{border-collapse:collapse;width:100%;margin:8px 0}
th,td{border-bottom:1px solid #d8dde3;padding:4px 8px;text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}.pass{color:#176d2f}.fail{color:#a31d1d}
.better{color:#176d2f}.worse{color:#a31d1d}details{margin:6px 0}pre{white-space:pre-wrap;
background:#f4f6f8;padding:8px;border-radius:4px;max-height:20em;overflow:auto}
svg text{font:12px system-ui,sans-serif;fill:#1d232a}
"""
BAR_NOW, BAR_BEFORE = "#2f6fd1", "#9aa6b2"


def render_html(result: EvalResult, changes: list[TaskChange] | None = None,
                base_url: str = "") -> str:  # fmt: skip
    """The report page."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(result.started_at))
    model = f" · model {escape(result.model)}" if result.model else ""
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        f"<title>Evaluation {escape(result.suite)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Evaluation: {escape(result.suite)}</h1>",
        f"<p class='muted'>profile {escape(result.profile)}{model} · each task "
        f"{result.repeat}× · {when} · {result.seconds:.1f} s</p>",
        f"<p><strong>passed {result.passed} of {result.total}</strong></p>",
        _table(result),
        "<h2>Pass rate per task</h2>",
        chart_svg(result, changes),
    ]
    if changes is not None:
        parts.append(_changes(changes))
    parts += ["<h2>Runs</h2>", *(_run(run, base_url) for run in result.runs), "</body></html>"]
    return "\n".join(parts)


def _table(result: EvalResult) -> str:
    head = "".join(f"<th scope='col'>{escape(h)}</th>" for h in HEADERS)
    body = "".join(
        "<tr>" + "".join(
            (f"<th scope='row'>{escape(c)}</th>" if i == 0 else f"<td>{escape(c)}</td>")
            for i, c in enumerate(row)
        ) + "</tr>"
        for row in rows(result)
    )  # fmt: skip
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def chart_svg(result: EvalResult, changes: list[TaskChange] | None = None) -> str:
    """Horizontal bars, one per task (two when compared: before in grey, now in blue); the
    numbers are written beside the bars, and the SVG has a text description."""
    before = {c.name: c.before for c in changes or []}
    summaries = result.summaries()
    label_w, bar_w, row_h = 180, 320, 34 if changes is not None else 22
    height = 10 + row_h * len(summaries)
    said = "; ".join(f"{s.name} {100 * s.rate:.0f}%" for s in summaries)
    out = [f"<svg role='img' viewBox='0 0 {label_w + bar_w + 60} {height}' width='100%' "
           f"style='max-width:{label_w + bar_w + 60}px' aria-label='Pass rate per task: "
           f"{escape(said, quote=True)}'>"]  # fmt: skip
    for i, s in enumerate(summaries):
        y = 5 + i * row_h
        out.append(f"<text x='0' y='{y + 14}'>{escape(s.name[:28])}</text>")
        bars = [(s.rate, BAR_NOW)]
        if changes is not None:
            was = before.get(s.name)
            bars = [(was if was is not None else 0.0, BAR_BEFORE), (s.rate, BAR_NOW)]
        for k, (rate, colour) in enumerate(bars):
            top = y + k * 14
            out.append(f"<rect x='{label_w}' y='{top + 2}' width='{max(bar_w * rate, 1):.1f}' "
                       f"height='12' fill='{colour}'/>")  # fmt: skip
            out.append(f"<text x='{label_w + bar_w * rate + 6:.1f}' y='{top + 12}'>"
                       f"{100 * rate:.0f}%</text>")  # fmt: skip
    out.append("</svg>")
    if changes is not None:
        out.append(f"<p class='muted'><span style='color:{BAR_BEFORE}'>■</span> before · "
                   f"<span style='color:{BAR_NOW}'>■</span> now</p>")  # fmt: skip
    return "".join(out)


def _changes(changes: list[TaskChange]) -> str:
    def rate(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.0f}%"

    body = "".join(
        f"<tr><th scope='row'>{escape(c.name)}</th><td>{rate(c.before)}</td><td>{rate(c.now)}</td>"
        f"<td class='{c.change}'>{c.change}</td></tr>"
        for c in changes
    )
    return ("<h2>Compared with the earlier result</h2><table><thead><tr><th scope='col'>task</th>"
            "<th scope='col'>before</th><th scope='col'>now</th><th scope='col'>change</th></tr>"
            f"</thead><tbody>{body}</tbody></table>")  # fmt: skip


def _run(run: Run, base_url: str) -> str:
    state = "<span class='pass'>passed</span>" if run.passed else "<span class='fail'>failed</span>"
    link = (f"<a href='{escape(base_url, quote=True)}/#/chat/{escape(run.chat_id, quote=True)}'>"
            "open the chat</a>") if run.chat_id else ""  # fmt: skip
    checks = "".join(
        f"<li class='{'pass' if c.passed else 'fail'}'>{'✓' if c.passed else '✗'} "
        f"{escape(c.description)}{': ' + escape(c.detail) if c.detail else ''}</li>"
        for c in run.checks
    )
    error = f"<p class='fail'>{escape(run.error)}</p>" if run.error else ""
    return (f"<details{'' if run.passed else ' open'}><summary>{escape(run.task)} "
            f"(run {run.attempt}): {state} · {run.calls} model calls · {run.tokens:,} tokens · "
            f"{run.cost:.4f} USD · {run.seconds:.1f} s · {link}</summary>{error}"
            f"<ul>{checks}</ul><pre>{escape(run.answer)}</pre></details>")  # fmt: skip
