"""`python3 cadre.py eval SUITE --profile P [--model M] [--repeat N] [--against OLD.json]`.

Runs in this process: the agents' runtime and a chat store of its own over `usr/` (as
run_ui.py starts them, without the web server), so it needs no running Cadre, and its
chats are ordinary saved chats that Cadre lists once it runs on that `usr/`; the report
links each run to its chat there. While a Cadre runs on the same `usr/` it refuses (as
`cadre.py replay` does): two chat stores would not know each other's chats; run the suite
from the Evaluations panel or `POST /api/v1/evals/runs` then. Only the start is checked,
not held: a Cadre started meanwhile does not wait for the evaluation to end.

Prints a progress bar on stderr, then the table on stdout, ending with `passed X of Y`;
writes the JSON result and the HTML report (default: usr/evals/results/). Exit status: 0
when the suite ran, whatever passed; 2 when it could not run (a bad suite, profile, model
or earlier result), in plain words.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TextIO

from core import tracing
from evals import places
from evals.html_report import render_html
from evals.model_choice import overrides_for
from evals.results import EvalResult, ResultError, Run, compare, load_result, save_result
from evals.runner import Plan, run_suite
from evals.suite import SuiteError, load_suite
from evals.table import render
from helpers.errors import UserError
from helpers.settings import load_settings
from profiles.catalog import get_available_agents_dict
from store.backup import swap

log = logging.getLogger(__name__)

BUSY = (
    "Cadre is running on this usr/: run the suite from the Evaluations panel, or with "
    "POST /api/v1/evals/runs"
)
#: Where the report's links point unless --link says otherwise (run_ui.py's default).
DEFAULT_LINK = "http://127.0.0.1:5080"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cadre.py eval", description="Run an evaluation suite against a profile."
    )
    parser.add_argument("suite", help="a suite file, or the name of one in usr/evals/ or "
                        "evals/suites/")  # fmt: skip
    parser.add_argument("--profile", required=True, help="the agent profile to evaluate")
    parser.add_argument("--model", default="", help="a model preset, a configured chat model, "
                        "or a litellm model name (default: the settings' models)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="runs of each task (default 1)")
    parser.add_argument("--against", type=Path, help="an earlier result (JSON) to compare with")
    parser.add_argument("--parallel", type=int, help="runs at once (default: the setting "
                        "eval_parallel)")  # fmt: skip
    parser.add_argument("--out", type=Path, help="folder for the result and the report "
                        "(default: usr/evals/results/)")  # fmt: skip
    parser.add_argument(
        "--link",
        default=DEFAULT_LINK,
        help=f"Cadre's address, for the report's links to chats ({DEFAULT_LINK})",
    )
    return parser.parse_args(argv)


def plan_from(args: argparse.Namespace) -> tuple[Plan, EvalResult | None]:
    """What to run, checked before anything starts; UserError saying what is wrong."""
    with swap.exclusive(BUSY):
        pass  # no Cadre holds usr/ now (it holds it shared while it runs)
    found = places.find_suite(args.suite)
    if found is None:
        names = ", ".join(s.name for s in places.suites()) or "none"
        raise UserError(f"no suite {args.suite!r}: give a file, or one of: {names}")
    suite = load_suite(found)
    if args.repeat < 1:
        raise UserError("--repeat must be 1 or more")
    profiles = get_available_agents_dict(None)
    if args.profile not in profiles:
        raise UserError(f"no available profile {args.profile!r}: use one of "
                        f"{', '.join(sorted(profiles))}")  # fmt: skip
    settings = load_settings()
    against = load_result(args.against) if args.against else None
    plan = Plan(suite=suite, profile=args.profile,
                model_overrides=overrides_for(args.model, None, any_model=True),
                model_label=args.model.strip(), repeat=args.repeat,
                parallel=args.parallel or settings.eval_parallel,
                timeout=settings.eval_task_timeout, suite_path=str(found))  # fmt: skip
    return plan, against


class ProgressBar:
    """`[#####.....] 3/10 capital passed` on one line of stderr, redrawn per run."""

    def __init__(self, out: TextIO, total: int) -> None:
        self.out = out
        self.draw(0, total, "starting")

    def draw(self, done: int, total: int, said: str) -> None:
        filled = round(20 * done / total) if total else 20
        end = "\n" if done == total else ""
        self.out.write(
            f"\r[{'#' * filled}{'.' * (20 - filled)}] {done}/{total} {said[:50]:<50}{end}"
        )
        self.out.flush()

    def __call__(self, run: Run, done: int, total: int) -> None:
        self.draw(done, total, f"{run.task} {'passed' if run.passed else 'failed'}")


def execute(plan: Plan, out: TextIO = sys.stderr) -> EvalResult:
    """Start the agents' runtime and a chat store, run the plan, save every chat, stop."""
    from helpers.runtime import AgentRuntime
    from initialize import ChatFactory, preload_local_models
    from store.chats import ChatManager

    preload_local_models(load_settings())
    runtime = AgentRuntime().start()
    chats = ChatManager(runtime, ChatFactory(runtime))
    try:
        jobs = len(plan.suite.tasks) * plan.repeat
        return run_suite(chats, plan, ProgressBar(out, jobs))
    finally:
        for context in chats.registry.all():
            chats.save_now(context)
        chats.close_sessions()
        runtime.stop()
        tracing.shutdown()  # the runs' last spans sent before the process ends


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        plan, against = plan_from(args)
    except (UserError, SuiteError, ResultError) as exc:
        print(f"cannot run the evaluation: {exc}", file=sys.stderr)
        return 2
    result = execute(plan)
    json_path, html_path = places.result_paths(result.suite, args.out)
    changes = compare(against, result) if against is not None else None
    save_result(result, json_path)
    html_path.write_text(render_html(result, changes, args.link.rstrip("/")), encoding="utf-8")
    print(f"result: {json_path}\nreport: {html_path}", file=sys.stderr)
    print(render(result, changes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
