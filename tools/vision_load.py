"""The `vision_load` tool: look at image files of the work folder or the chat's folder.

Each image is checked (a PNG, JPEG, GIF or WebP within helpers/images.py's limits),
copied into the chat's `images/` folder (so the chat keeps what its agent saw) and
carried by the tool's result: a model that sees gets it as an image part on its
next call, a text-only model a note that it cannot see it (core/prompt/vision.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from core.tool import Response, Tool, ToolArgs
from helpers.confine import PathRefused, inside, resolve_inside
from helpers.errors import RepairableException
from helpers.folders import chat_dir, work_dir
from helpers.images import (
    IMAGE_FOLDERS,
    ImageRef,
    ImageRefused,
    keep_in_chat,
    read_image,
    ref_in_chat,
)

#: Most images one call may load (each costs up to a thousand tokens or more, every step).
MAX_IMAGES = 8


class VisionLoadArgs(ToolArgs):
    paths: list[str] = Field(
        min_length=1,
        max_length=MAX_IMAGES,
        description="Image files, relative to the work folder, or absolute in the chat's folder.",
    )

    @field_validator("paths", mode="before")
    @classmethod
    def _one_path(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value  # a model often sends just one


class VisionLoad(Tool):
    """Shows the model image files."""

    Args = VisionLoadArgs

    async def execute(self, args: VisionLoadArgs) -> Response:
        loaded, refused = await asyncio.to_thread(self._load, args.paths)
        if not loaded:
            raise RepairableException(
                self.ctx.read_prompt("fw.vision_load.none.md", problems="\n".join(refused))
            )
        if self.log is not None:  # the log shows what the agent looked at
            self.log.update(kvps={**self.args, "images": [image.path for image in loaded]})
        message = self.ctx.read_prompt(
            "fw.vision_load.done.md",
            images="\n".join(f"- {i.name} ({i.width}x{i.height})" for i in loaded),
            problems="\n".join(refused),
        )
        return Response(message, additional={"images": loaded})

    def _load(self, paths: list[str]) -> tuple[list[ImageRef], list[str]]:
        loaded: list[ImageRef] = []
        refused: list[str] = []
        for raw in paths:
            try:
                loaded.append(self._load_one(raw))
            except (ImageRefused, PathRefused) as exc:
                refused.append(f"- {raw}: {exc}")
        return loaded, refused

    def _load_one(self, raw: str) -> ImageRef:
        chat = chat_dir(self.ctx.chat_id)
        if Path(raw).is_absolute() and inside(Path(raw).resolve(), [chat]):
            path = resolve_inside(raw, chat, what="this chat's folder")
            relative = path.relative_to(chat.resolve())
            if len(relative.parts) == 2 and relative.parts[0] in IMAGE_FOLDERS:
                return ref_in_chat(chat, relative.as_posix(), raw)  # the chat holds it already
            root = chat
        else:
            root = work_dir(self.ctx.settings.work_dir, self.ctx.space)
            path = resolve_inside(raw, root)
        data, info = read_image(path, [root], raw)
        return keep_in_chat(chat, raw, data, info)
