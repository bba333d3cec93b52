"""Skills: what listing them costs every step, and what they cost the prompt.

Every agent step checks whether its system prompt is still current, and the
skills' listing is one of its inputs: that check (the folders and SKILL.md
files stat'ed, nothing parsed) is paid on every step, so it is measured with
many skills installed, beside discovering them from scratch (each SKILL.md
read and parsed, as after an edit) and the prompt tokens per skill listed.
"""

from __future__ import annotations

import os
import time

from bench.harness import Row, timed
from helpers.files import usr_path
from models.tokens import count_tokens
from profiles import skills

#: Skills installed for the figures (a large collection; most people have a handful).
MANY = 100


def _install(count: int) -> None:
    then = time.time() - 60  # settled files, as installed skills are (see file_snapshot)
    for number in range(count):
        root = usr_path("skills", f"skill-{number:03d}")
        root.mkdir(parents=True, exist_ok=True)
        (root / "SKILL.md").write_text(
            f"---\nname: skill-{number:03d}\ndescription: Handle task kind {number}, what it"
            " does and when to use it, in one or two sentences.\n---\n\n" + "Step.\n" * 40
        )
        for path in (root / "SKILL.md", root):
            os.utime(path, (then, then))
    os.utime(usr_path("skills"), (then, then))


def _listing() -> str:
    return "\n".join(f"- `{s.name}`: {s.description}" for s in skills.usable_skills())


def run(quick: bool) -> list[Row]:
    count = 20 if quick else MANY
    _install(count)
    skills.discover_skills()  # parsed once: the check below reuses it
    check = timed(skills.discover_skills, repeat=20)

    def cold() -> None:
        skills._discovered.clear()
        skills._parsed = skills._ParsedSkills()
        skills.discover_skills()

    discover = timed(cold, repeat=5)
    shipped = len(skills.usable_skills()) - count
    per_skill = count_tokens(_listing()) / (count + shipped)
    return [
        Row(f"skills: per-step check of {count} installed skills (unchanged, nothing parsed)",
            check * 1000, "ms", target=5.0, note="noisy: shared CPU"),
        Row(f"skills: discovering {count} skills from scratch (every SKILL.md parsed)",
            discover * 1000, "ms", note="after an edit, only the edited file is parsed again"),
        Row("skills: system prompt tokens per skill listed (name and description)",
            per_skill, "tokens"),
    ]  # fmt: skip
