"""Agent Zero 1.x's plugins (`usr/plugins/<name>/`), copied into Cadre's `usr/plugins/`.

A folder there with a `plugin.yaml` is a plugin the user installed (by hand or
from Agent Zero's Plugin Hub): it is copied unchanged, its on/off mark
(`.toggle-0` off, `.toggle-1` on) included, to Cadre's `usr/plugins/<name>/`,
and listed in the report. Cadre's plugin system decides what of it runs and
shows what does not map; the import switches nothing on. A folder without a
manifest holds the user's settings of one of Agent Zero's own plugins
(`config.json`): `_model_config`'s are the model settings
(store/agent_zero/model_config.py), the others have no counterpart in Cadre.
"""

from __future__ import annotations

from pathlib import Path

from helpers.files import usr_path
from store.agent_zero.common import Report, copy_folder, entries

MANIFEST = "plugin.yaml"
TOGGLES = frozenset({".toggle-0", ".toggle-1"})
#: A plugin cloned from a repository: its history is not part of it.
HISTORY = frozenset({".git"})
#: Agent Zero's own plugin whose settings the import reads elsewhere.
READ_ELSEWHERE = {"_model_config": "read for the model settings"}
#: `_model_config`'s named model sets, kept beside its configuration.
PRESETS = "presets.yaml"


def copy_plugins(folder: Path, overwrite: bool, report: Report) -> None:
    for entry in entries(folder, "plugin", report):
        if not entry.is_dir():
            continue
        if not (entry / MANIFEST).is_file() or (entry / MANIFEST).is_symlink():
            why = READ_ELSEWHERE.get(entry.name) or (
                "settings of one of Agent Zero's own plugins; Cadre has no such plugin"
            )
            if entry.name in READ_ELSEWHERE:
                report.already(f"plugins/{entry.name}: {why}")
                if (entry / PRESETS).exists():
                    report.left(f"plugins/{entry.name}/{PRESETS}", "Agent Zero's model presets: "
                                "make them again in Settings, Model presets")  # fmt: skip
            else:
                report.left(f"plugins/{entry.name}", why)
            continue
        if (entry / ".git").is_dir():
            report.left(f"plugin {entry.name}: .git", "its repository's history is not copied")
        state = " (switched off in Agent Zero)" if (entry / ".toggle-0").exists() else ""
        copy_folder(entry, usr_path("plugins", entry.name), f"plugin {entry.name}", overwrite,
                    report, also=TOGGLES, skip=HISTORY,
                    note=f"{state}; Cadre's Plugins panel shows what of it runs")  # fmt: skip
