"""The `skills` tool: `skills:list`, `:load` a skill's instructions, `:files` and `:read` its files.

The system prompt names each skill with its description only; an agent loads
the instructions of the one its task needs, and reads the skill's other files
when the instructions send it there. Files are read only inside the skill's
own folder (helpers/confine.py); a long one is saved and shown cut in the
middle like any long tool result (core/long_results.py).
"""

from __future__ import annotations

import asyncio

from pydantic import Field

from core.tool import Response, Tool, ToolArgs
from helpers.confine import PathRefused, read_inside, resolve_inside
from helpers.errors import RepairableException
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
        if self.method not in METHODS:
            raise RepairableException(
                "skills needs a method: use tool_name skills:load, skills:read, skills:files"
                f" or skills:list (got {self.full_name!r})"
            )
        if self.method == "list":
            return Response(self._listing())
        skill = self._skill(args.name)
        if self.method == "read":
            return Response(await asyncio.to_thread(self._read, skill, args.path))
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

    def _where(self) -> tuple[str, str | None]:
        return self.ctx.profile, self.ctx.project

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
            problem = found.problem or "it is disabled (enabled: false)"
            raise RepairableException(
                self.ctx.read_prompt("fw.skills.unusable.md", name=found.name, problem=problem)
            )
        return found

    def _files(self, skill: Skill) -> str:
        files, more = skill_files(skill.root)
        lines = [f"- {f.path} ({f.size:,} bytes)" for f in files if f.path != "SKILL.md"]
        return self.ctx.read_prompt(
            "fw.skills.files.md", name=skill.name, folder=skill.root, files="\n".join(lines),
            more=more, shown=len(files),
        )  # fmt: skip

    def _read(self, skill: Skill, path: str) -> str:
        if not path.strip():
            raise RepairableException(
                f"skills:read needs `path`: a file of skill {skill.name!r} as skills:files lists it"
            )
        try:
            real = resolve_inside(path.strip(), skill.root.resolve(), what=f"skill {skill.name!r}")
            if not real.is_file():
                raise PathRefused(f"{path!r} is not a file of skill {skill.name!r}")
            data = read_inside(real, [skill.root], READ_LIMIT)
        except PathRefused as exc:
            raise RepairableException(f"path refused: {exc}") from None
        except OSError as exc:
            raise RepairableException(f"cannot read {path!r}: {exc.strerror or exc}") from None
        if b"\0" in data[:8192]:
            raise RepairableException(
                f"{path!r} is not a text file; use it with code_execution_tool at {real}"
            )
        text = data[:READ_LIMIT].decode("utf-8", errors="replace")
        if len(data) > READ_LIMIT:
            text += f"\n[... the file goes on past {READ_LIMIT // 1024} KB ...]"
        return text
