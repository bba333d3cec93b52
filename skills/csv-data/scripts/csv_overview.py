#!/usr/bin/env python3
"""A first look at a CSV file: delimiter, rows, and per column its type, gaps and values.

Standard library only, so it runs wherever Python 3 does. Usage:

    python3 csv_overview.py data.csv [--rows N] [--column NAME] [--encoding ENC]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import Counter
from pathlib import Path

#: Bytes read to guess the delimiter.
SAMPLE = 64 * 1024
#: Most common values shown for a text column.
TOP = 5


def read_text(path: Path, encoding: str | None) -> tuple[str, str]:
    """The file's text and the encoding that read it (UTF-8, with or without BOM, then Latin-1)."""
    data = path.read_bytes()
    for candidate in [encoding] if encoding else ["utf-8-sig", "cp1252", "latin-1"]:
        try:
            return data.decode(candidate), candidate
        except UnicodeDecodeError:
            continue
    raise SystemExit(f"cannot decode {path} as {encoding}")


def sniff(text: str) -> csv.Dialect | type[csv.Dialect]:
    try:
        return csv.Sniffer().sniff(text[:SAMPLE], delimiters=",;\t|")
    except csv.Error:
        return csv.excel  # one column, or too irregular to tell: plain commas


def number(value: str) -> float | None:
    cleaned = value.strip().replace(",", "").replace("_", "")
    if cleaned.endswith("%"):
        cleaned = cleaned[:-1]
    try:
        return float(cleaned)
    except ValueError:
        return None


def describe(name: str, values: list[str], detail: bool) -> list[str]:
    filled = [v for v in values if v.strip()]
    numbers = [n for n in (number(v) for v in filled) if n is not None]
    lines = [f"== {name}"]
    empty = len(values) - len(filled)
    lines.append(f"   empty: {empty} of {len(values)}   distinct: {len(set(filled))}")
    if filled and len(numbers) >= 0.5 * len(filled):  # mostly numbers: odd ones listed
        kind = "integer" if all(n.is_integer() for n in numbers) else "decimal"
        odd = [v for v in filled if number(v) is None]
        lines.append(
            f"   {kind}: min {min(numbers):g}  max {max(numbers):g}  "
            f"mean {statistics.fmean(numbers):.4g}  median {statistics.median(numbers):g}"
        )
        if odd:
            lines.append(f"   not numbers ({len(odd)}): {', '.join(sorted(set(odd))[:TOP])}")
    else:
        top = Counter(filled).most_common(TOP * 4 if detail else TOP)
        shown = ", ".join(f"{value!r} x{count}" for value, count in top)
        lines.append(f"   text: {shown}")
        lengths = [len(v) for v in filled]
        if lengths:
            lines.append(f"   length: {min(lengths)} to {max(lengths)} characters")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--rows", type=int, default=0, help="show the first N rows")
    parser.add_argument("--column", help="describe only this column, in more detail")
    parser.add_argument("--encoding", help="the file's encoding (guessed when not given)")
    args = parser.parse_args(argv)

    text, encoding = read_text(args.file, args.encoding)
    dialect = sniff(text)
    rows = list(csv.reader(text.splitlines(), dialect))
    if not rows:
        print(f"{args.file}: empty")
        return 0
    header, body = rows[0], rows[1:]
    ragged = sum(1 for row in body if len(row) != len(header))
    print(f"{args.file}: {len(body)} rows, {len(header)} columns, "
          f"delimiter {dialect.delimiter!r}, encoding {encoding}")  # fmt: skip
    if ragged:
        print(f"warning: {ragged} rows do not have {len(header)} cells")
    if args.rows:
        for row in rows[: args.rows + 1]:
            print(" | ".join(row))
    for index, name in enumerate(header):
        if args.column and name != args.column:
            continue
        values = [row[index] if index < len(row) else "" for row in body]
        print("\n".join(describe(name or f"(column {index + 1})", values, bool(args.column))))
    if args.column and args.column not in header:
        print(f"no column {args.column!r}; the columns are: {', '.join(header)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
