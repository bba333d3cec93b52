"""`python -m bench [--quick] [NAME ...]`: run the benchmarks, print one table."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from bench.harness import Row, table, write_results
from bench.model_file import ModelNotDownloaded

#: Benchmark modules, in the order their rows are printed.
MODULES = [
    "runtime", "models", "steps", "streaming", "server", "serving", "cluster", "persistence",
    "context",
    "structured",
    "ui", "openai_api", "mcp", "mcp_server", "teams", "skills", "browser", "backup",
    "sandbox", "masking",
]  # fmt: skip
#: Run only when named: `embedded` takes ~10 minutes (the built-in model on a CPU).
BY_NAME = ["embedded"]
#: Left out of `--quick` unless named: minutes of the built-in model on a CPU, where the
#: quick run must end within two.
NOT_QUICK = {"structured": "the built-in model answers for minutes on a CPU"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, under 2 minutes")
    parser.add_argument("names", nargs="*", help=f"run only these of {MODULES + BY_NAME}")
    args = parser.parse_args()
    rows: dict[str, list[Row]] = {}
    failed = []
    # A chat may still be saving as its runtime stops: its files must not fail the table.
    with tempfile.TemporaryDirectory(prefix="cadre-bench-", ignore_cleanup_errors=True) as scratch:
        for name in args.names or MODULES:
            if args.quick and not args.names and name in NOT_QUICK:
                why = f"left out of --quick ({NOT_QUICK[name]}): python -m bench {name}"
                rows[name] = [Row(f"{name}: skipped", 0, "-", note=why)]
                continue
            # Benchmarks write chats and settings: never into the user's own usr/,
            # and each into a usr/ of its own, so none sees another's chats.
            os.environ["CADRE_USR_DIR"] = str(Path(scratch) / name / "usr")
            print(f"running {name} ...", file=sys.stderr, flush=True)
            began = time.perf_counter()
            try:
                rows[name] = importlib.import_module(f"bench.{name}").run(args.quick)
            except ModelNotDownloaded as exc:  # a fresh clone: said, not failed
                rows[name] = [Row(f"{name}: skipped", 0, "-", note=str(exc))]
            except Exception:  # noqa: BLE001 - report it, and run the others
                traceback.print_exc()
                failed.append(name)
            print(f"  {name}: {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
    print(table([row for module_rows in rows.values() for row in module_rows]))
    if not args.quick:  # quick figures are rough: they never replace full ones
        write_results(rows, Path(__file__).with_name("results.json"))
    if failed:
        print(f"failed: {', '.join(failed)} (see above)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
