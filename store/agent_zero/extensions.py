"""Agent Zero 1.x's own extensions (`usr/extensions/`), copied to Cadre's `usr/extensions/`.

Agent Zero 1.x runs the Python files of `usr/extensions/python/<point>/` at its
named extension points (`monologue_start`, `tool_execute_after`, ...), and loads
`usr/extensions/webui/<point>/` into its page. Cadre looks for Agent Zero
extensions at `usr/extensions/<point>/<file>.py` and runs those whose point has a
meaning in Cadre (it reports the others as not run): the Python ones are copied
there unchanged; its page's extensions have no place in Cadre's page and are left.
"""

from __future__ import annotations

from pathlib import Path

from helpers.files import usr_path
from store.agent_zero.common import Report, copy_folder, entries

PYTHON = "python"
WEBUI = "webui"


def copy_extensions(folder: Path, overwrite: bool, report: Report) -> None:
    for kind in entries(folder, "extensions", report):
        if kind.name == WEBUI:
            report.left(f"extensions/{WEBUI}", "extensions of Agent Zero's web page: Cadre's "
                        "page does not load them")  # fmt: skip
        elif kind.name != PYTHON or not kind.is_dir():
            report.left(f"extensions/{kind.name}", "not an extension kind Agent Zero 1.x has")
        else:
            for point in entries(kind, "extension point", report):
                if point.is_dir():
                    copy_folder(point, usr_path("extensions", point.name),
                                f"extensions at {point.name}", overwrite, report)  # fmt: skip
