"""The `skills` tool: `skills:list`, `:load` a skill's instructions, `:files` and `:read` its files.

The system prompt names each skill with its description only; an agent loads
the instructions of the one its task needs, and reads the skill's other files
when the instructions send it there. Files are read only inside the skill's
own folder (helpers/confine.py); a long one is saved and shown cut in the
middle like any long tool result (core/prompt/long_results.py).
"""

from __future__ import annotations

import asyncio

from pydantic import Field

from core.tool import Response, Tool, ToolArgs
from helpers.confine import PathRefused, read_inside, resolve_inside
from helpers.errors import RepairableException, RepairableTold
from helpers.told import Told, render_lines, told
from profiles.projects import ProjectRef
from profiles.skills import Skill, discover_skills, skill_files, usable_skills

METHODS = ("list", "load", "files", "read")
#: Largest file `skills:read` returns; a bigger one is cut here (history cuts it further).
READ_LIMIT = 512 * 1024


class SkillsArgs(ToolArgs):
    name: str = Field(default="", max_length=200, description="The skill's name.")
    path: str = Field(default="", max_length=1_000, description="read: a file of the skill.")


class Skills(Tool):
    """Lists the agent's skills and reads their instructions and files on demand."""

    Args = SkillsArgs
    methods = METHODS

    async def execute(self, args: SkillsArgs) -> Response:
        if self.method == "list":
            return Response(self._listing())
        skill = self._skill(args.name)
        if self.method == "read":
            parts = await asyncio.to_thread(self._read, skill, args.path)
            return Response(render_lines(parts, self.ctx.read_prompt))
        files = await asyncio.to_thread(self._files, skill)
        if self.method == "files":
            return Response(files)
        return Response(
            self.ctx.read_prompt(
                "fw.skills.loaded.md",
                name=skill.name,
                source=skill.source,
                folder=skill.root,
                instructions=skill.head.body if skill.head else "",
                files=files,
            )
        )

    def _where(self) -> tuple[str, ProjectRef | None]:
        return self.ctx.profile, self.ctx.project_ref  # the owner's project

    def _listing(self) -> str:
        lines = [f"- `{s.name}`: {' '.join(s.description.split())}" for s in usable_skills(
            *self._where())]  # fmt: skip
        return self.ctx.read_prompt("fw.skills.list.md", skills="\n".join(lines))

    def _skill(self, name: str) -> Skill:
        found = discover_skills(*self._where()).get(name.strip())
        if found is None:
            available = ", ".join(s.name for s in usable_skills(*self._where()))
            raise RepairableException(
                self.ctx.read_prompt("fw.skills.unknown.md", name=name, available=available)
            )
        if not found.usable:
            raise RepairableException(
                self.ctx.read_prompt(
                    "fw.skills.unusable.md", name=found.name, problem=found.problem or ""
                )
            )
        return found

    def _files(self, skill: Skill) -> str:
        files, more = skill_files(skill.root)
        lines = [f"- {f.path} ({f.size:,} bytes)" for f in files if f.path != "SKILL.md"]
        return self.ctx.read_prompt(
            "fw.skills.files.md", name=skill.name, folder=skill.root, files="\n".join(lines),
            more=more, shown=len(files),
        )  # fmt: skip

    def _read(self, skill: Skill, path: str) -> list[Told | str]:
        """The file's text (and a note when it is cut); off the loop, so a refusal is a
        `RepairableTold`, rendered by `Tool.run`."""
        named = {"path": repr(path), "name": repr(skill.name)}
        if not path.strip():
            raise RepairableTold("fw.skills.path_missing.md", name=named["name"])
        try:
            real = resolve_inside(path.strip(), skill.root.resolve(), what=f"skill {skill.name!r}")
            data = read_inside(real, [skill.root], READ_LIMIT) if real.is_file() else None
        except PathRefused as exc:
            raise RepairableTold("fw.path_refused.md", reason=str(exc)) from None
        except OSError as exc:
            raise RepairableTold(
                "fw.skills.unreadable.md", path=named["path"], error=exc.strerror or exc
            ) from None
        if data is None:
            raise RepairableTold("fw.skills.not_a_file.md", **named)
        if b"\0" in data[:8192]:
            raise RepairableTold("fw.skills.not_text.md", path=named["path"], real=real)
        parts: list[Told | str] = [data[:READ_LIMIT].decode("utf-8", errors="replace")]
        if len(data) > READ_LIMIT:
            parts.append(told("fw.skills.read_cut.md", kb=READ_LIMIT // 1024))
        return parts
