"""Rows, timing helpers and the table every benchmark prints."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Row:
    """One figure. `target` is an upper bound (lower is better) unless `higher_is_better`."""

    name: str
    figure: float
    unit: str
    target: float | None = None
    higher_is_better: bool = False
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.target is None:
            return "-"
        ok = self.figure >= self.target if self.higher_is_better else self.figure <= self.target
        return "pass" if ok else "miss"


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median seconds of `repeat` calls."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """`with stopwatch() as t: ...` then `t[0]` is the elapsed seconds."""
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)


def table(rows: list[Row]) -> str:
    head = ("benchmark", "figure", "unit", "target", "result")
    body = [
        (
            r.name,
            f"{r.figure:,.3g}" if r.figure < 1000 else f"{r.figure:,.0f}",
            r.unit,
            "" if r.target is None else (">= " if r.higher_is_better else "<= ") + f"{r.target:g}",
            r.verdict,
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in column) for column in zip(head, *body, strict=False)]
    lines = [" | ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True))
             for line in (head, *body)]  # fmt: skip
    lines.insert(1, "-+-".join("-" * w for w in widths))
    notes = [f"- {r.name}: {r.note}" for r in rows if r.note]  # why a row is skipped, ...
    return "\n".join(lines + ([""] + notes if notes else []))


def write_results(rows: dict[str, list[Row]], path: Path) -> None:
    """Each benchmark module's rows under its name; a run of some modules keeps the others'."""
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = {}
    if not isinstance(kept, dict):  # the older format: a flat list
        kept = {}
    kept.update({name: [{**asdict(r), "verdict": r.verdict} for r in module_rows]
                 for name, module_rows in rows.items()})  # fmt: skip
    path.write_text(json.dumps(kept, indent=2) + "\n")


def provider_env(base_url: str) -> dict[str, str]:
    """Environment that points a server's chat and utility models at the fake model server."""
    return {
        "CADRE_CHAT_MODEL": "openai/m", "CADRE_CHAT_API_BASE": base_url, "CADRE_CHAT_API_KEY": "k",
        "CADRE_UTIL_MODEL": "openai/u", "CADRE_UTIL_API_BASE": base_url, "CADRE_UTIL_API_KEY": "k",
    }  # fmt: skip
