"""`python -m bench [--quick] [NAME ...]`: run the benchmarks, print one table."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from pathlib import Path

from bench.harness import Row, table, write_results

#: Benchmark modules, in the order their rows are printed.
MODULES = ["runtime", "server", "persistence", "context", "structured", "ui"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, under 2 minutes")
    parser.add_argument("names", nargs="*", help=f"run only these of {MODULES}")
    args = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="cadre-bench-") as scratch:
        # Benchmarks write chats and settings: never into the user's own usr/.
        os.environ["CADRE_USR_DIR"] = str(Path(scratch) / "usr")
        for name in args.names or MODULES:
            module = importlib.import_module(f"bench.{name}")
            print(f"running {name} ...", file=sys.stderr, flush=True)
            rows.extend(module.run(args.quick))
    print(table(rows))
    write_results(rows, Path(__file__).with_name("results.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
