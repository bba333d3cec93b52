"""A Cadre plugin written by the tests: a tool with its prompt, run-event handlers, a
settings section and a panel, as a folder, a zip or a git repository."""

from __future__ import annotations

import io
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

TOOL = """
from core.tool import Response, Tool, ToolArgs


class WeatherArgs(ToolArgs):
    city: str


class WeatherProbe(Tool):
    Args = WeatherArgs

    async def execute(self, args: WeatherArgs) -> Response:
        return Response(f"weather-probe says: sunny in {args.city}")
"""

PROMPT = """{{if brief}}
Tells the weather of a city (weather_probe): `city`.
{{else}}
### weather_probe
Tells the weather of a city. Arguments: `city`.
{{endif}}
"""

#: Handlers: the run's answer written beside the plugin (the test reads it); a tool's end
#: raising when the tool was `weather_probe` with city "Boom".
HANDLERS = """
from pathlib import Path

HERE = Path(__file__).parent


def on_run_ended(event):
    if event.answer is not None:
        with open(HERE / "answers.txt", "a") as out:
            out.write(event.answer + "\\n")


async def on_tool_ended(event):
    if event.tool_name == "weather_probe" and "Boom" in event.response.message:
        raise ValueError("the probe exploded")
"""

PANEL = """export function render(root) {
  root.textContent = "Weather panel here";
}
"""


def manifest(name: str = "weather", version: str = "1.0", extra: str = "") -> str:
    return (
        f"name: {name}\ntitle: Weather\ndescription: Tells the weather.\n"
        f'version: "{version}"\npanel: webui/panel.js\n'
        "settings:\n"
        "  - {name: city, title: Home city, description: Where you live., default: Paris}\n"
        "  - {name: days, title: Days ahead, type: integer, default: 3, min: 1, max: 10}\n"
        f"{extra}"
    )


def plugin_files(name: str = "weather", version: str = "1.0", extra: str = "") -> dict[str, str]:
    """The plugin's files by path inside its folder."""
    return {
        "plugin.yaml": manifest(name, version, extra),
        "tools/weather_probe.py": TOOL,
        "prompts/agent.system.tool.weather_probe.md": PROMPT,
        "handlers.py": HANDLERS,
        "webui/panel.js": PANEL,
    }


def write_plugin(folder: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    return folder


def plugin_zip(files: dict[str, str], top: str = "weather") -> bytes:
    """A zip of the plugin, its files under one top folder (as zipping a folder makes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, text in files.items():
            archive.writestr(f"{top}/{path}" if top else path, text)
    return buffer.getvalue()


def git_repo(folder: Path, files: dict[str, str]) -> Path:
    """A local git repository holding the plugin at its top, one commit (the test is
    skipped where git is not installed: `cadre.py test` installs it)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: plugins from git repositories are not tested")
    write_plugin(folder, files)
    commit(folder, "first", init=True)
    return folder


def commit(folder: Path, message: str, *, init: bool = False) -> None:
    env_args = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid"]
    if init:
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "add", "-A"], check=True)
    subprocess.run(["git", *env_args, "-C", str(folder), "commit", "-q", "-m", message],
                   check=True)  # fmt: skip
